import path from "node:path";
import type { LoopgateConfig } from "../config/schema.js";
import { postgresUrlFrom } from "./postgres/postgres-url.js";

/**
 * Where the store lives, for a person: the SQLite file, or the Postgres server (its password masked) and schema.
 * Startup lines and empty listings say it, so nobody goes looking for a file that is not there.
 */
export function describeStorage(
  config: Pick<LoopgateConfig, "storage">,
  stateDir: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (config.storage.backend !== "postgres") return `sqlite ${path.join(stateDir, "loopgate.sqlite")}`;
  const pg = config.storage.postgres;
  let where = "(no URL)";
  try {
    where = maskPassword(postgresUrlFrom(pg.url, env) ?? where);
  } catch (err) {
    where = `(${(err as Error).message})`;
  }
  return `postgres ${where}${pg.schema ? ` schema ${pg.schema}` : ""}`;
}

/** The URL as it may be printed or logged: its password replaced by ***. */
export function maskPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@]*@/, "//$1:***@");
  }
}
