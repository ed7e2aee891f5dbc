/**
 * The URL a node uses: the config's `storage.postgres.url`, else `LOOPGATE_POSTGRES_URL`, else none. In a module of its
 * own (no `pg` import), so loading a config can check it without loading the driver.
 */
export function postgresUrlFrom(
  configUrl: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const url = configUrl?.trim() || env.LOOPGATE_POSTGRES_URL?.trim();
  if (!url) return undefined;
  if (!/^postgres(ql)?:\/\//.test(url)) {
    const from = configUrl?.trim() ? "storage.postgres.url" : "LOOPGATE_POSTGRES_URL";
    throw new Error(`${from}: expected a postgres:// or postgresql:// URL`);
  }
  return url;
}
