import { randomBytes } from "node:crypto";
import pg from "pg";
import type { PostgresOptions } from "../storage/postgres/pool.js";

/**
 * The Postgres tests run only when LOOPGATE_TEST_POSTGRES_URL names a server (`.ci/run` sets it); otherwise they are
 * skipped, and test/setup/postgres-notice.ts says so once.
 */
export const testPostgresUrl: string | undefined = process.env.LOOPGATE_TEST_POSTGRES_URL?.trim() || undefined;

export interface TestSchema {
  schema: string;
  /** Connection options whose search_path is the schema. */
  options: PostgresOptions;
  drop(): Promise<void>;
}

/** A fresh schema `lg_<random>` for one test file, so files running in parallel never see each other's rows. */
export async function createTestSchema(url: string): Promise<TestSchema> {
  const schema = `lg_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: url, application_name: "loopgate-test-admin" });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await admin.end();
  }
  return {
    schema,
    options: { url, schema, applicationName: `loopgate-test-${schema}` },
    async drop() {
      const c = new pg.Client({ connectionString: url, application_name: "loopgate-test-admin" });
      await c.connect();
      try {
        await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      } finally {
        await c.end();
      }
    },
  };
}
