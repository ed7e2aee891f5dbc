import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../testing/postgres-schema.js";
import { migratePostgres } from "./migrate.js";
import {
  type NotifyPointer,
  notify,
  notifyChannel,
  PgNotifier,
  sessionChannel,
  sessionChannelSql,
} from "./notifier.js";
import { createPostgresPool, inTransaction } from "./pool.js";

describe("notifier inputs", () => {
  it("refuses a pointer too big for a NOTIFY payload, and a channel that is not an identifier", async () => {
    const db = { query: async () => ({ rows: [] }) } as unknown as pg.Pool;
    await expect(notify(db, "c", { blob: "x".repeat(8000) })).rejects.toThrow("under 8000 bytes");
    expect(() => new PgNotifier({ connection: { url: "postgres://x" }, channel: "bad-name;" })).toThrow(
      "notifier channel",
    );
  });
});

/** Resolves with the next value `register` hands to its callback; bounded, so a lost notification fails the test. */
function next<T>(register: (fn: (v: T) => void) => () => void, what: string, ms = 10_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no ${what} within ${ms} ms`));
    }, ms);
    const off = register((v) => {
      clearTimeout(timer);
      off();
      resolve(v);
    });
  });
}

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("LISTEN/NOTIFY pointers across nodes", () => {
  let ts: TestSchema;
  let writer: pg.Pool; // "node B", running the run
  let admin: pg.Pool;
  let listener: PgNotifier; // "node A", following it
  let channel: string;
  const errors: Error[] = [];

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    writer = createPostgresPool(ts.options);
    admin = createPostgresPool(ts.options);
    await migratePostgres(writer);
    channel = notifyChannel(ts.schema);
    listener = new PgNotifier({
      connection: ts.options,
      channel,
      reconnect: { baseMs: 20, maxMs: 200 },
      onError: (e) => errors.push(e),
    });
    await listener.start();
  });
  afterAll(async () => {
    await listener?.stop();
    await writer?.end();
    await admin?.end();
    await ts?.drop();
  });

  async function appendEvent(runId: string, seq: number, event: string): Promise<void> {
    // the event row and its pointer in one transaction: the NOTIFY goes out at COMMIT, after the row is visible
    await inTransaction(writer, async (c) => {
      await c.query(
        "INSERT INTO run_events (run_id, seq, ts, session_key, stream, event) VALUES ($1, $2, 0, 'main', 'assistant', $3)",
        [runId, seq, event],
      );
      await notify(c, channel, { runId, seq });
    });
  }

  it("delivers the pointer, and the reader finds the whole event (bigger than a NOTIFY payload) in the table", async () => {
    const big = JSON.stringify({ text: "y".repeat(100_000) });
    const got = next<NotifyPointer>((fn) => listener.subscribe(fn), "notification");
    await appendEvent("run-1", 1, big);
    const pointer = await got;
    expect(pointer).toEqual({ runId: "run-1", seq: 1 });
    const { rows } = await writer.query("SELECT event FROM run_events WHERE run_id = $1 AND seq = $2", [
      pointer.runId,
      pointer.seq,
    ]);
    expect(rows[0].event).toBe(big);
  });

  it("comes back after its connection is killed, and a reader catches up on what was sent during the gap", async () => {
    const pid = listener.backendPid;
    expect(pid).toBeTypeOf("number");
    const seen: NotifyPointer[] = [];
    const off = listener.subscribe((p) => seen.push(p));
    let lastSeq = 1; // what the reader had delivered of run-1 before the gap
    const reconnected = next<void>((fn) => listener.onReconnect(fn), "reconnect");
    await admin.query("SELECT pg_terminate_backend($1)", [pid]);
    // written while the listener may be down: its pointer may be lost, the row is not
    await appendEvent("run-1", 2, '{"n":2}');
    await reconnected;
    expect(listener.backendPid).not.toBe(pid);
    // catch-up after a reconnect reads the table from the last delivered seq
    const { rows } = await writer.query<{ seq: number }>(
      "SELECT seq FROM run_events WHERE run_id = 'run-1' AND seq > $1 ORDER BY seq",
      [lastSeq],
    );
    expect(rows.map((r) => r.seq)).toEqual([2]);
    lastSeq = 2;
    // and live pointers flow again
    const live = next<NotifyPointer>((fn) => listener.subscribe(fn), "notification after reconnect");
    await appendEvent("run-1", 3, '{"n":3}');
    expect(await live).toEqual({ runId: "run-1", seq: 3 });
    expect(seen.some((p) => p.seq === 3)).toBe(true);
    off();
    expect(errors.length).toBeGreaterThanOrEqual(1); // the termination was reported, not thrown
  });

  it("a subscriber that throws is reported and does not stop the others", async () => {
    const before = errors.length;
    const offBad = listener.subscribe(() => {
      throw new Error("subscriber bug");
    });
    const got = next<NotifyPointer>((fn) => listener.subscribe(fn), "notification past a throwing subscriber");
    await notify(writer, channel, { sessionKey: "main" });
    expect(await got).toEqual({ sessionKey: "main" });
    offBad();
    expect(errors.slice(before).map((e) => e.message)).toEqual(["subscriber bug"]);
    expect(listener.listening).toBe(true);
  });

  it("ignores other channels and payloads that are not JSON objects", async () => {
    const seen: NotifyPointer[] = [];
    const off = listener.subscribe((p) => seen.push(p));
    await writer.query("SELECT pg_notify($1, 'not json'), pg_notify($1, '[1]'), pg_notify($2, '{}')", [
      channel,
      `${channel}_other`,
    ]);
    const marker = next<NotifyPointer>((fn) => listener.subscribe(fn), "marker");
    await notify(writer, channel, { marker: true });
    await marker;
    off();
    expect(seen).toEqual([{ marker: true }]);
  });

  it("hears a session's channel only while someone holds it, and again after its connection is killed", async () => {
    const session = sessionChannel(channel, `a session key longer than a channel name may be: ${"k".repeat(80)}`);
    const { rows } = await writer.query<{ c: string }>(`SELECT ${sessionChannelSql("$1::text", "$2::text")} AS c`, [
      channel,
      `a session key longer than a channel name may be: ${"k".repeat(80)}`,
    ]);
    expect(rows[0].c).toBe(session); // the statements that announce their own rows name the same channel
    const seen: NotifyPointer[] = [];
    const off = listener.subscribe((p) => seen.push(p));
    async function sendAndMark(n: number): Promise<void> {
      await notify(writer, session, { n });
      const marker = next<NotifyPointer>((fn) => listener.subscribe(fn), "marker");
      await notify(writer, channel, { marker: n });
      await marker;
    }
    await sendAndMark(1); // nobody holds it
    const first = await listener.listen(session);
    const second = await listener.listen(session);
    await sendAndMark(2);
    first();
    await sendAndMark(3); // one holder left
    const reconnected = next<void>((fn) => listener.onReconnect(fn), "reconnect");
    await admin.query("SELECT pg_terminate_backend($1)", [listener.backendPid]);
    await reconnected;
    await sendAndMark(4); // listened to again on the new connection
    second();
    await sendAndMark(5); // the last holder let go: UNLISTEN
    off();
    expect(seen.filter((p) => p.n !== undefined).map((p) => p.n)).toEqual([2, 3, 4]);
    expect(listener.extraChannels).toBe(0);
  });
});
