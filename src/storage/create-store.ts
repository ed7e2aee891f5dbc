import type { LoopgateConfig } from "../config/schema.js";
import type { Logger } from "../infra/logger.js";
import { describeStorage } from "./describe-storage.js";
import { openCheckedStore } from "./integrity.js";
import { postgresUrlFrom } from "./postgres/postgres-url.js";
import { SqliteStoreAdapter } from "./sqlite-adapter.js";
import { openStore } from "./sqlite-store.js";
import type { Store } from "./types.js";

export interface CreateStoreOptions {
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
 * The one way to open the store of a state dir, so every opener (gateway, CLI, embedded runs) follows the config:
 * SQLite (`<stateDir>/loopgate.sqlite`) or Postgres (`storage.postgres`, SPEC 18). Asynchronous because a server
 * backend connects and migrates before it answers.
 */
export async function createStore(
  config: Pick<LoopgateConfig, "storage">,
  stateDir: string,
  opts: CreateStoreOptions = {},
): Promise<Store> {
  if (config.storage.backend === "postgres")
    return createPostgresStore(config.storage, opts.env ?? process.env, opts.logger);
  if (config.storage.backend !== "sqlite")
    throw new Error(`storage.backend: "${config.storage.backend}" is not a known backend (sqlite, postgres)`);
  const db = opts.owner
    ? openCheckedStore(stateDir, { quickCheck: config.storage.quickCheckOnStart })
    : openStore(stateDir);
  return new SqliteStoreAdapter(db);
}

/** The driver is loaded only by a process that uses Postgres: SQLite-only commands never pay for it. */
async function createPostgresStore(
  storage: LoopgateConfig["storage"],
  env: NodeJS.ProcessEnv,
  logger: Logger | undefined,
): Promise<Store> {
  const pg = storage.postgres;
  // config load says this already; a config built in code skips the load checks
  const url = postgresUrlFrom(pg.url, env);
  if (!url) {
    throw new Error(
      'storage.postgres.url: required when storage.backend is "postgres" (or set the LOOPGATE_POSTGRES_URL environment variable)',
    );
  }
  const { openPostgresStore } = await import("./postgres/store.js");
  const { DEFAULT_LEASE_MS } = await import("./postgres/session-leases.js");
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
