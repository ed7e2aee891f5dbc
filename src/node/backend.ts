import type { LoopgateConfig } from "../config/schema.js";
import type { Logger } from "../infra/logger.js";
import { describeStorage } from "../storage/describe-storage.js";
import { openCheckedStore } from "../storage/integrity.js";
import { postgresUrlFrom } from "../storage/postgres/postgres-url.js";
import type { PostgresStore } from "../storage/postgres/store.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { openStore } from "../storage/sqlite-store.js";
import type { Store } from "../storage/types.js";

/**
 * Which backend a process runs on, decided once from `storage.backend` and carried with its type: code that needs
 * the Postgres store's pool or LISTEN connection gets them from the `postgres` branch, never by inspecting a Store.
 */
export type Backend = { kind: "sqlite"; store: Store } | { kind: "postgres"; store: PostgresStore };

export interface OpenBackendOptions {
  /**
   * A long-running owner (the gateway) checks the database before serving: `storage.quickCheckOnStart` decides
   * whether every page is read. Short commands (the CLI) skip the check.
   */
  owner?: boolean;
  /** Where `LOOPGATE_POSTGRES_URL` is read when `storage.postgres.url` is unset; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Hears what a server backend lives through (a connection lost and replaced); unset: nothing is said. */
  logger?: Logger;
}

/**
 * Opens the store of a state dir as the config says: SQLite (`<stateDir>/loopgate.sqlite`) or Postgres
 * (`storage.postgres`, SPEC 18). Asynchronous because a server backend connects and migrates before it answers.
 */
export async function openBackend(
  config: Pick<LoopgateConfig, "storage">,
  stateDir: string,
  opts: OpenBackendOptions = {},
): Promise<Backend> {
  if (config.storage.backend === "postgres") {
    const store = await openPostgres(config.storage, opts.env ?? process.env, opts.logger);
    return { kind: "postgres", store };
  }
  if (config.storage.backend !== "sqlite")
    throw new Error(`storage.backend: "${config.storage.backend}" is not a known backend (sqlite, postgres)`);
  const db = opts.owner
    ? openCheckedStore(stateDir, { quickCheck: config.storage.quickCheckOnStart })
    : openStore(stateDir);
  return { kind: "sqlite", store: new SqliteStoreAdapter(db) };
}

/** The store alone, for a caller that only reads and writes rows (`loopgate sessions`, embedding apps). */
export async function createStore(
  config: Pick<LoopgateConfig, "storage">,
  stateDir: string,
  opts: OpenBackendOptions = {},
): Promise<Store> {
  return (await openBackend(config, stateDir, opts)).store;
}

/** The driver is loaded only by a process that uses Postgres: SQLite-only commands never pay for it. */
async function openPostgres(
  storage: LoopgateConfig["storage"],
  env: NodeJS.ProcessEnv,
  logger: Logger | undefined,
): Promise<PostgresStore> {
  const pg = storage.postgres;
  // config load says this already; a config built in code skips the load checks
  const url = postgresUrlFrom(pg.url, env);
  if (!url) {
    throw new Error(
      'storage.postgres.url: required when storage.backend is "postgres" (or set the LOOPGATE_POSTGRES_URL environment variable)',
    );
  }
  const { openPostgresStore } = await import("../storage/postgres/store.js");
  const { DEFAULT_LEASE_MS } = await import("../storage/postgres/session-leases.js");
  const onError = (what: string) => (err: Error) => logger?.warn(`postgres: ${what}`, { error: err.message });
  try {
    return await openPostgresStore({
      url,
      ...(pg.schema ? { schema: pg.schema } : {}),
      ...(pg.poolSize ? { poolMax: pg.poolSize } : {}),
      ...(pg.statementTimeoutMs ? { statementTimeoutMs: pg.statementTimeoutMs } : {}),
      leaseMs: pg.leaseMs ?? DEFAULT_LEASE_MS,
      onConnectionError: onError("a pooled connection failed; the next statement gets a new one"),
      notifier: { onError: onError("the LISTEN connection failed; reconnecting") },
    });
  } catch (err) {
    // "connect ECONNREFUSED" alone does not say which setting to look at
    throw new Error(
      `storage.postgres: cannot open the store at ${describeStorage({ storage }, "", env).replace(/^postgres /, "")}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}
