import pg from "pg";
import { isTransientPostgresError } from "./transient-errors.js";

/**
 * How a node reaches Postgres: `storage.postgres.*` in the config (url, schema, poolSize, statementTimeoutMs), turned
 * into these options by node/backend.ts (openBackend); the URL falls back to `LOOPGATE_POSTGRES_URL` (postgresUrlFrom).
 */
export interface PostgresOptions {
  url: string;
  /** Pooled connections per node (the notifier's LISTEN connection is extra). Default 10. */
  poolMax?: number;
  /** A statement running longer is cancelled by the server. Default 30000 ms. */
  statementTimeoutMs?: number;
  /** Shown in pg_stat_activity, so an operator can tell Loopgate's connections (and which node's) apart. */
  applicationName?: string;
  /** Tables live in this schema (search_path). Tests use one schema per file; production leaves it unset. */
  schema?: string;
  /** Giving up on a connection attempt. Default 10000 ms. */
  connectTimeoutMs?: number;
  /**
   * `storage.postgres.leaseMs`: a transaction this node leaves idle longer (the node paused in the middle of a write)
   * is ended by the server, so the lease row it locks (a fenced write's FOR SHARE) never keeps another node from
   * taking the session long after the lease ran out. Unset: twice the statement timeout.
   */
  leaseMs?: number;
  /**
   * A pooled connection failed (server restart, pg_terminate_backend, network), idle or checked out: reported here,
   * never thrown. The pool drops the connection; a query that was using it fails, the next one gets a new one.
   */
  onConnectionError?: (err: Error) => void;
}

export const POSTGRES_DEFAULTS = {
  poolMax: 10,
  statementTimeoutMs: 30_000,
  applicationName: "loopgate",
  connectTimeoutMs: 10_000,
} as const;

// re-exported: callers that already hold the pool module need not know where it lives
export { postgresUrlFrom } from "./postgres-url.js";

/** A schema name goes into `search_path` and DDL unquoted, so only plain lower-case identifiers are accepted. */
export function checkSchemaName(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new Error(`postgres schema: "${schema}" is not a plain identifier ([a-z_][a-z0-9_]*, at most 63 characters)`);
  }
  return schema;
}

const INT8_OID = 20;
/**
 * BIGINT columns (ms timestamps, ledger seqs, fencing tokens) come back as numbers, not the driver's default strings.
 * Safe: they stay far below 2^53. Per connection, so a host application's own `pg` use is left alone.
 */
const loopgateTypes = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === INT8_OID && format !== "binary") return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
} as unknown as pg.CustomTypesConfig;

/** One connection's settings, shared by the pool and the dedicated connections (notifier, migrations). */
export function connectionConfig(opts: PostgresOptions): pg.ClientConfig {
  // plan_cache_mode only governs named statements (pool.ts names the repeated ones): without it the server kept
  // planning the transcript append and read afresh at every call (custom plans, 0.36 ms each), while their generic
  // plans are the same key lookups; the store's statements select by keys, never by a skewed value
  const startup = [
    ...(opts.schema ? [`-c search_path=${checkSchemaName(opts.schema)}`] : []),
    "-c plan_cache_mode=force_generic_plan",
  ].join(" ");
  return {
    connectionString: opts.url,
    application_name: opts.applicationName ?? POSTGRES_DEFAULTS.applicationName,
    statement_timeout: opts.statementTimeoutMs ?? POSTGRES_DEFAULTS.statementTimeoutMs,
    // a transaction left open by a stalled node must not hold row locks (a claimed input, a lease) for ever, nor
    // past the lease: a live node never leaves one idle that long (it sends a transaction's statements back to back)
    idle_in_transaction_session_timeout: Math.min(
      2 * (opts.statementTimeoutMs ?? POSTGRES_DEFAULTS.statementTimeoutMs),
      opts.leaseMs ?? Number.POSITIVE_INFINITY,
    ),
    connectionTimeoutMillis: opts.connectTimeoutMs ?? POSTGRES_DEFAULTS.connectTimeoutMs,
    // without keepalive a connection through a dead peer (or a dropped NAT entry) hangs until the OS gives up, hours
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    types: loopgateTypes,
    options: startup,
  };
}

/** The node's pool. Connection errors are reported, never thrown: the process keeps serving. */
export function createPostgresPool(opts: PostgresOptions): pg.Pool {
  const pool = new pg.Pool({
    ...connectionConfig(opts),
    max: opts.poolMax ?? POSTGRES_DEFAULTS.poolMax,
    idleTimeoutMillis: 30_000,
  });
  // The pool listens only to its idle connections; a checked-out connection whose server goes away emits 'error'
  // with nobody listening, and an unhandled 'error' event ends the process. So every connection gets a listener.
  const names = new StatementNames();
  pool.on("connect", (client) => {
    client.on("error", (err) => opts.onConnectionError?.(err));
    nameRepeatedStatements(client, names);
  });
  // ...which also hears the idle case; the pool's own 'error' event then needs a listener only so it is not fatal
  pool.on("error", () => {});
  retryUnexecuted(pool, opts.poolMax ?? POSTGRES_DEFAULTS.poolMax);
  return pool;
}

/** A text sent this many times by the pool's connections is sent as a named statement from then on. */
export const NAME_AFTER_USES = 2;
/** At most this many texts are named per pool (so per connection): the rest are sent unnamed, as before. */
export const MAX_NAMED_STATEMENTS = 200;
/** Use counts kept for at most this many unnamed texts; past it they are forgotten and counted afresh. */
const MAX_COUNTED_TEXTS = 2_000;

/**
 * Which statement texts the pool's connections send as named (prepared) statements. Measured on a turn (bench
 * README, "pg-cpu"): an unnamed statement costs the server a parse, an analysis and a plan at every call, and for the
 * store's CTE statements that was more than their execution (1.8 ms of planning against 1.5 ms of execution per
 * turn, and the parse and analysis on top); a named one is parsed once per connection and, after five calls, runs
 * on a cached plan. Only texts the process repeats are named, and a bounded number of them, because each named
 * statement stays on every connection until it closes: a statement whose text varies (a multi-row VALUES list, a
 * SET list built from a patch) uses up a name per variant, and past the cap its variants simply go unnamed.
 */
export class StatementNames {
  private readonly uses = new Map<string, number>();
  private readonly names = new Map<string, string>();
  private next = 0;

  /** The name to send `text` under, or undefined to send it unnamed. */
  nameFor(text: string): string | undefined {
    const name = this.names.get(text);
    if (name !== undefined || this.names.size >= MAX_NAMED_STATEMENTS) return name;
    const n = (this.uses.get(text) ?? 0) + 1;
    if (n < NAME_AFTER_USES) {
      if (this.uses.size >= MAX_COUNTED_TEXTS) this.uses.clear();
      this.uses.set(text, n);
      return undefined;
    }
    this.uses.delete(text);
    const fresh = `lg_${this.next++}`;
    this.names.set(text, fresh);
    return fresh;
  }

  /**
   * The server refused to run `text`'s cached plan (its result's columns changed: another node's migration altered
   * a table under a `SELECT *` or `RETURNING *`). The text gets a new name, so the next call parses it afresh; the
   * old name stays prepared on the connections that have it, unused, until they close.
   */
  renamed(text: string): void {
    if (this.names.has(text)) this.names.set(text, `lg_${this.next++}`);
  }
}

type Callback = (err: Error | null, res?: unknown) => void;

/**
 * Every `query(text, values)` of this connection (also those `pool.query` makes through it) goes through
 * `names`: a repeated text is sent as `{ name, text, values }`. A text without parameters is left alone (BEGIN,
 * COMMIT, DDL: simple protocol, nothing to gain).
 */
function nameRepeatedStatements(client: pg.PoolClient, names: StatementNames): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const [text, values, callback] = args;
    if (typeof text !== "string" || !Array.isArray(values) || values.length === 0) return query(...args);
    const name = names.nameFor(text);
    if (name === undefined) return query(...args);
    const rename = (err: unknown) => {
      if (planChangedResultType(err)) names.renamed(text);
    };
    if (typeof callback === "function") {
      return query({ name, text, values }, (err: Error | null, res?: unknown) => {
        if (err) rename(err);
        (callback as Callback)(err, res);
      });
    }
    return (query({ name, text, values }) as Promise<unknown>).catch((err: unknown) => {
      rename(err);
      throw err;
    });
  };
}

/** A named statement's cached plan no longer fits its tables (see StatementNames.renamed). Nothing ran. */
function planChangedResultType(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  return (
    e?.code === "0A000" && typeof e.message === "string" && /cached plan must not change result type/.test(e.message)
  );
}

/**
 * A pooled connection can die between two queries (pg_terminate_backend, a server restart): the pool hands it out
 * before it has heard, and the next statement fails although the server never ran it. Such a statement is sent
 * once more on a fresh connection; a failure that leaves it unknown whether the statement ran (the socket closed
 * mid-statement) is not retried, and a second failure goes to the caller. Only the promise form of `pool.query`.
 */
function retryUnexecuted(pool: pg.Pool, poolMax: number): void {
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    if (typeof args[args.length - 1] === "function") return query(...args);
    return withFreshConnections(poolMax, () => query(...args));
  };
}

/**
 * Every idle connection of the pool may have died at once (a server restart): each failed attempt drops one, so
 * at most `poolMax` attempts meet a dead one and the next gets a fresh connection.
 */
async function withFreshConnections<T>(poolMax: number, attempt: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (i >= poolMax || !neverExecuted(err)) throw err;
    }
  }
}

/**
 * The server ended the backend before it ran the statement (57P01 admin_shutdown, 57P02 crash_shutdown: the
 * transaction of a single statement is rolled back), it refused the connection, or the driver refused to send on a
 * connection it already knew was broken.
 */
export function neverExecuted(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  if (e?.code === "57P01" || e?.code === "57P02" || e?.code === "57P03" || e?.code === "ECONNREFUSED") return true;
  // the server re-checks a named statement's plan before it runs it: nothing ran, and the text is renamed by now
  if (planChangedResultType(err)) return true;
  return typeof e?.message === "string" && /not queryable/.test(e.message);
}

/** What the primitives below need: a pool or a checked-out client (so a caller can put them in its transaction). */
export type Queryable = Pick<pg.Pool, "query"> | Pick<pg.PoolClient, "query">;

/**
 * Runs `fn` in one transaction on one pooled connection; rolls back (and rethrows) when it throws. A transaction the
 * server ended before it committed (the connection was terminated: `neverExecuted`) is run again, from the start, on
 * a fresh connection; `fn` must only query through `client`.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return withFreshConnections(pool.options.max ?? POSTGRES_DEFAULTS.poolMax, () => transactionOnce(pool, fn));
}

async function transactionOnce<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    const out = await fn(client);
    await client.query("COMMIT");
    return out;
  } catch (err) {
    // a connection that failed is not handed to the next caller: released with the error, the pool drops it
    if (isTransientPostgresError(err)) broken = err as Error;
    else await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release(broken);
  }
}

/**
 * The time a lease or heartbeat is measured in: the caller's clock when it gives one (tests, with a ManualClock), else
 * the database's (`$n` is NULL), so every node compares against one clock and node clock skew does not matter.
 */
export function nowSql(param: number): string {
  return `COALESCE($${param}::bigint, (extract(epoch from clock_timestamp()) * 1000)::bigint)`;
}
