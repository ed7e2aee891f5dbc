import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migratePostgres } from "../../dist/storage/postgres/migrate.js";
import { listDeadNodes } from "../../dist/storage/postgres/node-heartbeat.js";
import { createPostgresPool } from "../../dist/storage/postgres/pool.js";
import { SessionLeases } from "../../dist/storage/postgres/session-leases.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../dist/testing/postgres-schema.js";

// A real node process holds a session through its heartbeat (real timers, the database's clock), is killed with -9,
// and another node gets the session once the lease has run out, with a larger fencing token. No injected clock here:
// this is the production time path. Bounded polling only; no assertion on how long anything took.

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const holderJs = path.join(root, "test/fixtures/postgres/lease-holder.mjs");
// long enough that a beat delayed by a loaded machine (the whole suite on 2 shared cores) does not lapse the live
// holder's lease
const LEASE_MS = 4000;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("a node killed with -9 loses its sessions after the lease (real processes)", () => {
  let ts: TestSchema;
  let pool: pg.Pool;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    if (!fs.existsSync(path.join(root, "dist/storage/postgres/pool.js"))) throw new Error("run `npm run build` first");
    ts = await createTestSchema(testPostgresUrl as string);
    pool = createPostgresPool(ts.options);
    await migratePostgres(pool);
  });
  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await pool?.end();
    await ts?.drop();
  });

  it("keeps the session while it beats, loses it after kill -9, and the next owner's token is larger", {
    timeout: 60_000,
  }, async () => {
    child = spawn(process.execPath, [holderJs, "node-doomed", "main", String(LEASE_MS)], {
      env: { ...process.env, LG_PG_URL: ts.options.url, LG_PG_SCHEMA: ts.schema },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      out += d;
    });
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      out += d;
    });
    for (let i = 0; i < 200 && !/owned \d+/.test(out); i++) await pause(50);
    const owned = /owned (\d+)/.exec(out);
    expect(owned, out).not.toBeNull();
    const oldToken = Number(owned?.[1]);

    const survivor = new SessionLeases(pool, { nodeId: "node-survivor", leaseMs: LEASE_MS });
    // while the holder beats, its lease is renewed again and again, across several lease lengths, and stays its own
    const seenExpiries = new Set<number>();
    for (let i = 0; i < 1000 && seenExpiries.size < 3; i++) {
      expect(await survivor.acquire("main")).toBeUndefined();
      const h = await survivor.holder("main");
      expect(h?.nodeId).toBe("node-doomed");
      seenExpiries.add(h?.expiresAt ?? 0);
      await pause(25);
    }
    expect(seenExpiries.size).toBe(3);

    child.kill("SIGKILL");
    await new Promise((r) => child?.once("exit", r));
    let taken: Awaited<ReturnType<SessionLeases["acquire"]>>;
    for (let i = 0; i < 1000 && !taken; i++) {
      taken = await survivor.acquire("main");
      if (!taken) await pause(25);
    }
    expect(taken?.nodeId).toBe("node-survivor");
    expect(taken?.token).toBeGreaterThan(oldToken);
    expect((await listDeadNodes(pool, { leaseMs: LEASE_MS })).map((n) => n.id)).toEqual(["node-doomed"]);
  });
});
