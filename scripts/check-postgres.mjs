// Fails fast, with a clear message, when the Postgres server the tests need is not reachable: `.ci/run` calls it
// after `npm ci`, so a CI machine whose server did not come up stops here instead of in the middle of the suite.
// Bounded: a server still starting gets a few seconds, then the check gives up.
// usage: node scripts/check-postgres.mjs [url]   (default: $LOOPGATE_TEST_POSTGRES_URL)
import pg from "pg";

const url = process.argv[2] ?? process.env.LOOPGATE_TEST_POSTGRES_URL;
if (!url) {
  console.error("check-postgres: no URL (pass one, or set LOOPGATE_TEST_POSTGRES_URL)");
  process.exit(2);
}
const attempts = 10;
const delayMs = 1000;
let lastError;
for (let i = 1; i <= attempts; i++) {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: 3000,
    application_name: "loopgate-ci-check",
  });
  try {
    await client.connect();
    const { rows } = await client.query("SELECT current_setting('server_version') AS v");
    console.log(`check-postgres: ${redact(url)} is up (PostgreSQL ${rows[0].v})`);
    await client.end();
    process.exit(0);
  } catch (err) {
    lastError = err;
    await client.end().catch(() => {});
    if (i < attempts) await new Promise((r) => setTimeout(r, delayMs));
  }
}
console.error(
  `check-postgres: cannot reach ${redact(url)} after ${attempts} attempts: ${lastError?.message ?? lastError}\n` +
    "The Postgres tests need a running server (CI starts one before .ci/run); set LOOPGATE_TEST_POSTGRES_URL to use another.",
);
process.exit(1);

function redact(u) {
  return u.replace(/\/\/([^:@/]+):[^@/]*@/, "//$1:***@");
}
