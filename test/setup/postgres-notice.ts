// Vitest global setup: one line, once per run, when the Postgres tests are skipped (not one per test file).
export default function postgresNotice(): void {
  if (!process.env.LOOPGATE_TEST_POSTGRES_URL?.trim()) {
    console.log(
      "postgres: LOOPGATE_TEST_POSTGRES_URL is not set, so the Postgres tests are skipped (.ci/run sets it; e.g. postgres://postgres@127.0.0.1:5432/test)",
    );
  }
}
