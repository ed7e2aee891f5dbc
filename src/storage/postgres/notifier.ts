import { createHash } from "node:crypto";
import pg from "pg";
import { type Clock, systemClock } from "../../infra/clock.js";
import { connectionConfig, type PostgresOptions, type Queryable } from "./pool.js";

/**
 * Cross-node announcements over LISTEN/NOTIFY. A notification carries a pointer only (`{runId, seq}`,
 * `{sessionKey}`): the data itself is read from the tables, so Postgres's 8000-byte payload limit never limits an
 * event, and a reader that missed notifications loses nothing it cannot read back.
 *
 * What is missed: NOTIFY is delivered only to connections listening at that moment. While the LISTEN connection is
 * down (server restart, pg_terminate_backend, network), notifications are lost, not queued. So after every reconnect
 * the notifier calls its `onReconnect` listeners, and a reader catches up from the tables: for each run it follows,
 * `SELECT … FROM run_events WHERE run_id = $1 AND seq > <last seq it delivered>`, then carries on with live pointers.
 * (It must do the same once after `start()`, for anything written before it listened.)
 */
export type NotifyPointer = Readonly<Record<string, string | number | boolean | null>>;

/** NOTIFY is database-wide, not per schema: deployments (and test files) that share a database get their own channel. */
export function notifyChannel(schema?: string): string {
  return schema ? `loopgate_events_${schema}` : "loopgate_events";
}

/**
 * The channel of one session's run-event and transcript pointers: LISTENed to only by nodes whose clients follow the
 * session or one of its runs, so the other nodes of a fleet never receive them. Channel names stop at 63 bytes and a
 * session key can be longer, so the key is hashed (md5: a name, not a secret; SQL computes the same one with
 * `'lgs_' || md5(channel || ':' || session_key)`, see SESSION_CHANNEL_SQL). Derived from the node-level channel, so
 * deployments sharing a database stay apart here too.
 */
export function sessionChannel(channel: string, sessionKey: string): string {
  return `lgs_${createHash("md5").update(`${channel}:${sessionKey}`).digest("hex")}`;
}

/** `sessionChannel` in SQL, for statements that announce their rows themselves ($n: the node-level channel). */
export function sessionChannelSql(channelParam: string, sessionKeyExpr: string): string {
  return `'lgs_' || md5(${channelParam} || ':' || ${sessionKeyExpr})`;
}

/** Postgres refuses payloads of 8000 bytes or more; pointers are far smaller, so a big one is a caller's mistake. */
const MAX_PAYLOAD_BYTES = 7999;

/** Whether Postgres takes `payload` as a notification (a statement that sends one too big fails whole). */
export function fitsNotify(payload: string): boolean {
  return Buffer.byteLength(payload) <= MAX_PAYLOAD_BYTES;
}

/**
 * Announces `pointer` on `channel`. Inside a transaction the notification goes out at COMMIT, so a listener that reads
 * the tables on receipt always sees the rows written with it.
 */
export async function notify(db: Queryable, channel: string, pointer: NotifyPointer): Promise<void> {
  const payload = JSON.stringify(pointer);
  if (Buffer.byteLength(payload) > MAX_PAYLOAD_BYTES) {
    throw new Error(`notify: a pointer must stay under 8000 bytes of JSON (got ${Buffer.byteLength(payload)})`);
  }
  await db.query("SELECT pg_notify($1, $2)", [channel, payload]);
}

/** Several pointers in one statement (so one commit), sent in the order given. */
export async function notifyAll(db: Queryable, channel: string, pointers: readonly NotifyPointer[]): Promise<void> {
  const payloads = pointers.map((p) => JSON.stringify(p));
  const tooBig = payloads.find((p) => Buffer.byteLength(p) > MAX_PAYLOAD_BYTES);
  if (tooBig !== undefined) {
    throw new Error(`notify: a pointer must stay under 8000 bytes of JSON (got ${Buffer.byteLength(tooBig)})`);
  }
  await db.query("SELECT count(pg_notify($1, p)) FROM unnest($2::text[]) p", [channel, payloads]);
}

export interface NotifierOptions {
  connection: PostgresOptions;
  channel: string;
  /** Reconnect backoff: first delay, doubled per failed attempt up to `maxMs`. Defaults 250 ms and 5000 ms. */
  reconnect?: { baseMs?: number; maxMs?: number };
  /** Timers for the backoff (tests may pass a ManualClock). */
  clock?: Clock;
  /** The connection failed, or a reconnect attempt did: reported, never thrown. */
  onError?: (err: Error) => void;
}

type Listener<T> = (value: T) => void;

/** A channel name LISTEN takes unquoted: a plain lower-case identifier of at most 63 bytes. */
const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * One dedicated LISTEN connection per node (not a pooled one: a pooled connection would be handed to others). It
 * always listens on the node-level channel (what every node must hear: run starts and ends, session changes, intake,
 * cron, aborts); `listen` adds a channel while someone here wants it (reference counted: LISTEN on the first, UNLISTEN
 * after the last), and every such channel is listened to again after a reconnect.
 */
export class PgNotifier {
  private client: pg.Client | undefined;
  /** the extra channels and how many holders each has */
  private readonly extra = new Map<string, number>();
  /** LISTEN/UNLISTEN statements go out one after another, in the order asked */
  private channelOps: Promise<void> = Promise.resolve();
  private readonly listeners = new Set<Listener<NotifyPointer>>();
  private readonly reconnectListeners = new Set<Listener<void>>();
  private readonly clock: Clock;
  private stopped = false;
  private failures = 0;
  private retryTimer: unknown;

  constructor(private readonly opts: NotifierOptions) {
    if (!CHANNEL.test(opts.channel)) {
      throw new Error(`notifier channel: "${opts.channel}" is not a plain identifier`);
    }
    this.clock = opts.clock ?? systemClock;
  }

  /** Each notification's pointer; a payload that is not a JSON object is dropped (it is not ours). */
  subscribe(fn: Listener<NotifyPointer>): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Called after the connection came back: notifications may have been missed, catch up from the tables. */
  onReconnect(fn: Listener<void>): () => void {
    this.reconnectListeners.add(fn);
    return () => this.reconnectListeners.delete(fn);
  }

  /** Connects and listens; rejects if the first connection fails (a node should not start deaf). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.connect();
  }

  /** Whether the LISTEN connection is up right now. */
  get listening(): boolean {
    return this.client !== undefined;
  }

  /** The LISTEN connection's backend pid (tests terminate it to check reconnects). */
  get backendPid(): number | undefined {
    return (this.client as (pg.Client & { processID?: number }) | undefined)?.processID;
  }

  /**
   * Listens on `channel` too until the returned release is called (reference counted). Resolves once the LISTEN is in
   * place, so a read made after it misses no pointer; while the connection is down it resolves at once (the reconnect
   * listens again and its listeners catch up).
   */
  async listen(channel: string): Promise<() => void> {
    if (!CHANNEL.test(channel)) throw new Error(`notifier channel: "${channel}" is not a plain identifier`);
    const n = this.extra.get(channel) ?? 0;
    this.extra.set(channel, n + 1);
    if (n === 0) await this.channelOp(`LISTEN ${channel}`);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.extra.get(channel) ?? 1) - 1;
      if (left > 0) {
        this.extra.set(channel, left);
        return;
      }
      this.extra.delete(channel);
      void this.channelOp(`UNLISTEN ${channel}`);
    };
  }

  /** How many extra channels are listened to now (tests, stats). */
  get extraChannels(): number {
    return this.extra.size;
  }

  /** A failed LISTEN/UNLISTEN means the connection is going: its reconnect listens to what is held then. */
  private channelOp(sql: string): Promise<void> {
    const run = this.channelOps.then(async () => {
      const client = this.client;
      if (!client) return;
      try {
        await client.query(sql);
      } catch (err) {
        this.opts.onError?.(err as Error);
      }
    });
    this.channelOps = run;
    return run;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(connectionConfig(this.opts.connection));
    // only an established connection reconnects when lost; a failed attempt is handled by whoever awaited it
    let gone = false;
    const listened = new Set<string>();
    const onLost = (err?: Error) => {
      gone = true;
      if (this.client !== client) return;
      this.client = undefined;
      client.removeAllListeners("notification");
      client.end().catch(() => {});
      if (err) this.opts.onError?.(err);
      this.scheduleReconnect();
    };
    client.on("error", (err) => onLost(err));
    client.on("end", () => onLost());
    client.on("notification", (msg) => {
      if (msg.payload === undefined || (msg.channel !== this.opts.channel && !this.extra.has(msg.channel))) return;
      let pointer: unknown;
      try {
        pointer = JSON.parse(msg.payload);
      } catch {
        return;
      }
      if (pointer === null || typeof pointer !== "object" || Array.isArray(pointer)) return;
      this.deliver(this.listeners, pointer as NotifyPointer);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.opts.channel}`);
      // the channels held while the connection was down (their pointers are caught up by the reconnect listeners)
      for (const ch of this.extra.keys()) {
        await client.query(`LISTEN ${ch}`);
        listened.add(ch);
      }
    } catch (err) {
      client.removeAllListeners();
      client.on("error", () => {});
      await client.end().catch(() => {});
      throw err;
    }
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.failures = 0;
    // a channel asked for while this connection was being made (its LISTEN found no connection to go on)
    for (const ch of this.extra.keys()) if (!listened.has(ch)) void this.channelOp(`LISTEN ${ch}`);
    // lost between LISTEN's reply and here: nobody would notice (the handler saw no established connection yet)
    if (gone) onLost();
  }

  /** A listener that throws is reported; it must not stop the others, nor reach the socket's event handlers. */
  private deliver<T>(listeners: Set<Listener<T>>, value: T): void {
    for (const fn of listeners) {
      try {
        fn(value);
      } catch (err) {
        this.opts.onError?.(err as Error);
      }
    }
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.retryTimer !== undefined) return;
    const base = this.opts.reconnect?.baseMs ?? 250;
    const max = this.opts.reconnect?.maxMs ?? 5000;
    const delay = Math.min(max, base * 2 ** Math.min(this.failures, 20));
    this.retryTimer = this.clock.setTimeout(() => {
      this.retryTimer = undefined;
      if (this.stopped) return;
      this.connect().then(
        () => {
          if (this.stopped || !this.client) return;
          this.deliver(this.reconnectListeners, undefined);
        },
        (err: Error) => {
          this.failures++;
          this.opts.onError?.(err);
          this.scheduleReconnect();
        },
      );
    }, delay);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer !== undefined) this.clock.clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners("end");
      client.on("error", () => {});
      await client.end().catch(() => {});
    }
  }
}
