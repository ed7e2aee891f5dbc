import type { LoopgateConfig } from "../config/schema.js";
import { openCheckedStore } from "./integrity.js";
import { SqliteStoreAdapter } from "./sqlite-adapter.js";
import { openStore } from "./sqlite-store.js";
import type { Store } from "./types.js";

export interface CreateStoreOptions {
  /**
   * A long-running owner (the gateway) checks the database before serving: `storage.quickCheckOnStart` decides
   * whether every page is read. Short commands (the CLI) skip the check.
   */
  owner?: boolean;
}

/**
 * The one way to open the store of a state dir. SQLite (`<stateDir>/loopgate.sqlite`) is the only backend today; a
 * Postgres backend is chosen here when it lands (SPEC 18), so every opener — gateway, CLI, embedded runs — follows.
 * Asynchronous because a server backend connects and migrates before it answers.
 */
export async function createStore(
  config: Pick<LoopgateConfig, "storage">,
  stateDir: string,
  opts: CreateStoreOptions = {},
): Promise<Store> {
  // config load refuses "postgres" until its backend lands (config/unsupported.ts); a config built in code may not
  if (config.storage.backend !== "sqlite")
    throw new Error(`storage.backend: "${config.storage.backend}" is not supported yet`);
  const db = opts.owner
    ? openCheckedStore(stateDir, { quickCheck: config.storage.quickCheckOnStart })
    : openStore(stateDir);
  return new SqliteStoreAdapter(db);
}
