import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AuditAction } from "../protocol/payloads.js";
import type { ChatMessage } from "../providers/types.js";
import type { AuditEventInput, CostRow, RunRecord, Store, StoredRunEvent, TranscriptRow } from "./types.js";

/**
 * The Store conformance cases (Hono's common.case pattern): one file of cases, run by one `*.test.ts` per backend
 * (sqlite-store.conformance.test.ts always; postgres-store.conformance.test.ts when a Postgres server is given).
 * Every call is awaited, so the cases hold for a store that answers synchronously and for one that answers with
 * promises. What the cases pin is the Store contract (storage/types.ts), not one engine's behaviour.
 */
export interface StoreUnderTest {
  /** a store on a fresh, empty database */
  store: Store;
  /** another store on the same database (another process, another node): it sees what `store` committed */
  openAnother(): Promise<Store>;
  /** closes every store it opened and drops the database */
  cleanup(): Promise<void>;
}

const KEY = "agent:main:main";
const OTHER = "agent:main:other";

function user(text: string): ChatMessage {
  return { role: "user", content: text };
}

function msgRow(sessionKey: string, text: string, createdAt = 1): Omit<TranscriptRow, "seq" | "generation"> {
  return { sessionKey, kind: "message", createdAt, message: user(text) };
}

function run(runId: string, over: Partial<RunRecord> = {}): RunRecord {
  return { runId, sessionKey: KEY, status: "queued", acceptedAt: 1, params: { message: `m-${runId}` }, ...over };
}

let costs = 0;
function cost(over: Partial<CostRow> = {}): CostRow {
  costs++;
  return {
    id: `cost-${costs}-${Math.random().toString(36).slice(2)}`,
    ts: 100,
    runId: "r1",
    sessionKey: KEY,
    agentId: "main",
    provider: "fake",
    model: "m1",
    inputTokens: 100,
    outputTokens: 20,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    totalTokens: 120,
    costUsd: 0.5,
    ...over,
  };
}

function event(runId: string, seq: number, sessionKey = KEY): StoredRunEvent {
  const json = JSON.stringify({ runId, seq, stream: "assistant", ts: seq, sessionKey, data: { delta: `d${seq}` } });
  return { runId, seq, ts: seq, sessionKey, stream: "assistant", json };
}

let audits = 0;
function audit(over: Partial<AuditEventInput> = {}): AuditEventInput {
  audits++;
  return {
    eventId: `audit-${audits}-${Math.random().toString(36).slice(2)}`,
    sourceSequence: 1,
    occurredAt: 1000,
    actor: "cli",
    action: "agent.run.started" as AuditAction,
    status: "started",
    sessionKey: KEY,
    runId: "r1",
    schemaVersion: 1,
    redaction: "metadata_only",
    ...over,
  };
}

/** A refusal, whether the store throws at once or answers with a rejected promise. */
async function refused(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected the store to refuse");
}

export function storeConformance(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`Store conformance: ${name}`, () => {
    let t: StoreUnderTest;
    let store: Store;
    beforeEach(async () => {
      t = await open();
      store = t.store;
    });
    afterEach(async () => {
      await t.cleanup();
    });

    describe("sessions", () => {
      it("a session is created once, found by key and by id, and patched", async () => {
        const a = await store.ensureSession(KEY, "main", 100);
        const again = await store.ensureSession(KEY, "main", 200);
        expect(again.sessionId).toBe(a.sessionId);
        expect(a).toMatchObject({ key: KEY, agentId: "main", createdAt: 100, totalTokens: 0, compactionCount: 0 });
        expect((await store.getSessionById(a.sessionId))?.key).toBe(KEY);
        await store.updateSession(KEY, { label: "support", totalTokens: 42, updatedAt: 300 });
        expect(await store.getSession(KEY)).toMatchObject({ label: "support", totalTokens: 42, updatedAt: 300 });
        expect(await store.getSession("agent:main:nobody")).toBeUndefined();
      });

      it("lists newest update first, continues after a session, filters by agent, and counts", async () => {
        await store.ensureSession("agent:main:a", "main", 10);
        await store.ensureSession("agent:main:b", "main", 30);
        await store.ensureSession("agent:ops:c", "ops", 20);
        const all = await store.listSessions();
        expect(all.map((s) => s.key)).toEqual(["agent:main:b", "agent:ops:c", "agent:main:a"]);
        const rest = await store.listSessions({ after: { updatedAt: all[0].updatedAt, key: all[0].key } });
        expect(rest.map((s) => s.key)).toEqual(["agent:ops:c", "agent:main:a"]);
        expect((await store.listSessions({ agentId: "ops" })).map((s) => s.key)).toEqual(["agent:ops:c"]);
        expect((await store.listSessions({ limit: 1 })).map((s) => s.key)).toEqual(["agent:main:b"]);
        expect(await store.countSessions()).toBe(3);
      });

      it("delete drops the session, its transcript and its runs' events, and says whether it existed", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.appendTranscript([msgRow(KEY, "hello")]);
        await store.createRun(run("r1"));
        await store.appendRunEvents([event("r1", 1)]);
        expect(await store.deleteSession(KEY)).toBe(true);
        expect(await store.deleteSession(KEY)).toBe(false);
        expect(await store.getSession(KEY)).toBeUndefined();
        expect(await store.readTranscript(KEY)).toEqual([]);
        expect(await store.readRunEvents("r1")).toEqual([]);
      });
    });

    describe("transcripts and generations", () => {
      it("rows get the next seq of their session, in the order given, each session on its own", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.ensureSession(OTHER, "main", 1);
        const first = await store.appendTranscript([msgRow(KEY, "one"), msgRow(OTHER, "x"), msgRow(KEY, "two")]);
        expect(first.map((r) => [r.sessionKey, r.seq])).toEqual([
          [KEY, 1],
          [OTHER, 1],
          [KEY, 2],
        ]);
        await store.appendTranscript([msgRow(KEY, "three")]);
        const rows = await store.readTranscript(KEY);
        expect(rows.map((r) => [r.seq, r.message?.content])).toEqual([
          [1, "one"],
          [2, "two"],
          [3, "three"],
        ]);
      });

      it("reads a window by seq: before, after and limit", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.appendTranscript(Array.from({ length: 10 }, (_, i) => msgRow(KEY, `m${i + 1}`)));
        const seqs = async (opts: Parameters<Store["readTranscript"]>[1]) =>
          (await store.readTranscript(KEY, opts)).map((r) => r.seq);
        expect(await seqs({ afterSeq: 7 })).toEqual([8, 9, 10]);
        // a page before a seq is the newest rows below it, oldest first
        expect(await seqs({ beforeSeq: 6, limit: 2 })).toEqual([4, 5]);
        expect(await seqs({ afterSeq: 2, beforeSeq: 5 })).toEqual([3, 4]);
      });

      it("history-page-reads-by-byte-budget: maxBytes stops before older rows that would pass it; the newest row always comes", async () => {
        await store.ensureSession(KEY, "main", 1);
        const big = "x".repeat(100_000);
        await store.appendTranscript(Array.from({ length: 6 }, (_, i) => msgRow(KEY, `${i + 1}${big}`)));
        const seqs = async (opts: Parameters<Store["readTranscript"]>[1]) =>
          (await store.readTranscript(KEY, opts)).map((r) => r.seq);
        // each row's stored JSON is a little over 100,000 bytes: two fit in 250,000, not three
        expect(await seqs({ maxBytes: 250_000 })).toEqual([5, 6]);
        expect(await seqs({ maxBytes: 250_000, beforeSeq: 5, limit: 1 })).toEqual([4]);
        expect(await seqs({ maxBytes: 1, beforeSeq: 3 })).toEqual([2]);
        expect(await seqs({ maxBytes: 10_000_000, afterSeq: 4 })).toEqual([5, 6]);
        expect(await seqs({ maxBytes: 1, afterSeq: 6 })).toEqual([]);
        // strict: a row that alone passes the budget is left out too
        expect(await seqs({ maxBytes: 1, maxBytesStrict: true })).toEqual([]);
        expect(await seqs({ maxBytes: 250_000, maxBytesStrict: true, beforeSeq: 4 })).toEqual([2, 3]);
        // the sizes alone, newest first, with the same filters
        const sizes = await store.transcriptSizes(KEY, { beforeSeq: 3 });
        expect(sizes.map((s) => s.seq)).toEqual([2, 1]);
        expect(sizes.every((s) => s.bytes > 100_000 && s.bytes < 100_200)).toBe(true);
        expect(await store.transcriptSizes("agent:main:nobody")).toEqual([]);
      });

      it("a reset starts the next generation: the old rows stay with a reset marker, the new one starts empty", async () => {
        const first = (await store.ensureSession(KEY, "main", 1)).generation;
        await store.appendTranscript([msgRow(KEY, "old")]);
        const generation = await store.resetSession(KEY, 50, "sessions.reset");
        expect(generation).toBe(first + 1);
        expect((await store.getSession(KEY))?.generation).toBe(generation);
        expect(await store.readTranscript(KEY)).toEqual([]);
        const old = await store.readTranscript(KEY, { generation: first });
        expect(old.map((r) => [r.kind, r.text ?? r.message?.content])).toEqual([
          ["message", "old"],
          ["reset", "sessions.reset"],
        ]);
        await store.appendTranscript([msgRow(KEY, "new")]);
        const now = await store.readTranscript(KEY);
        expect(now.map((r) => [r.generation, r.message?.content])).toEqual([[generation, "new"]]);
      });
    });

    describe("compaction rows", () => {
      it("a compaction is counted on the session, and the model's history starts at its summary", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.appendTranscript([msgRow(KEY, "a"), msgRow(KEY, "b"), msgRow(KEY, "c")]);
        const row = await store.appendCompaction(KEY, { summary: "a and b happened", firstKeptSeq: 3, createdAt: 9 });
        expect(row).toMatchObject({ kind: "compaction", text: "a and b happened", firstKeptSeq: 3, seq: 4 });
        expect((await store.getSession(KEY))?.compactionCount).toBe(1);
        await store.appendTranscript([msgRow(KEY, "d")]);
        const context = await store.readContextRows(KEY);
        expect(context.map((r) => (r.kind === "compaction" ? `summary:${r.text}` : r.message?.content))).toEqual([
          "summary:a and b happened",
          "c",
          "d",
        ]);
      });

      it("without a compaction the history is every message row of the generation", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.appendTranscript([msgRow(KEY, "a"), msgRow(KEY, "b")]);
        expect((await store.readContextRows(KEY)).map((r) => r.message?.content)).toEqual(["a", "b"]);
      });
    });

    describe("run records and durable queued inputs", () => {
      it("a run record keeps its accepted input, and a patch changes only what it names", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.createRun(run("r1", { receipt: { kind: "queued", position: 1 } }));
        await store.updateRun("r1", { status: "running", startedAt: 5 });
        await store.updateRun("r1", { status: "ok", endedAt: 9, result: { payloads: [{ text: "hi" }] } });
        expect(await store.getRun("r1")).toMatchObject({
          runId: "r1",
          sessionKey: KEY,
          status: "ok",
          acceptedAt: 1,
          startedAt: 5,
          endedAt: 9,
          params: { message: "m-r1" },
          receipt: { kind: "queued", position: 1 },
          result: { payloads: [{ text: "hi" }] },
        });
        expect(await store.getRun("nope")).toBeUndefined();
      });

      it("queued inputs are listed by status and session, and another store on the database sees them", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.ensureSession(OTHER, "main", 1);
        await store.createRun(run("q1"));
        await store.createRun(run("q2", { sessionKey: OTHER }));
        await store.createRun(run("done", { status: "ok", endedAt: 3 }));
        const other = await t.openAnother();
        const queued = await other.listRuns({ statuses: ["queued"] });
        expect(queued.map((r) => r.runId).sort()).toEqual(["q1", "q2"]);
        expect((await other.listRuns({ statuses: ["queued"], sessionKey: OTHER })).map((r) => r.runId)).toEqual(["q2"]);
        expect((await other.getRun("q1"))?.params).toEqual({ message: "m-q1" });
      });

      it("idempotency: a second record with the same run id is refused and the first is kept", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.createRun(run("same", { params: { message: "first" } }));
        await refused(() => store.createRun(run("same", { params: { message: "second" } })));
        const other = await t.openAnother();
        await refused(() => other.createRun(run("same", { params: { message: "third" } })));
        expect((await store.getRun("same"))?.params).toEqual({ message: "first" });
      });

      it("acceptInput stores the session (when missing) and the accepted input together; a repeated run id is refused, the first kept", async () => {
        await store.acceptInput({ key: KEY, agentId: "main", now: 7 }, run("in1", { acceptedAt: 7 }));
        const other = await t.openAnother();
        expect(await other.getSession(KEY)).toMatchObject({ key: KEY, agentId: "main", createdAt: 7 });
        expect(await other.getRun("in1")).toMatchObject({
          status: "queued",
          acceptedAt: 7,
          params: { message: "m-in1" },
        });
        // an existing session is kept as it is
        await store.acceptInput({ key: KEY, agentId: "main", now: 20 }, run("in2", { acceptedAt: 20 }));
        expect((await store.getSession(KEY))?.createdAt).toBe(7);
        expect(await store.countSessions()).toBe(1);
        await refused(() =>
          store.acceptInput({ key: OTHER, agentId: "main", now: 30 }, run("in1", { params: { message: "again" } })),
        );
        expect((await store.getRun("in1"))?.params).toEqual({ message: "m-in1" });
        // all or none: the refused input did not leave its session behind
        expect(await store.getSession(OTHER)).toBeUndefined();
      });

      it("readIntake reads an idempotency key's run and the target session (by key or by id) together", async () => {
        expect(await store.readIntake("in1", { key: KEY })).toEqual({});
        await store.acceptInput({ key: KEY, agentId: "main", now: 7 }, run("in1", { acceptedAt: 7 }));
        const session = await store.getSession(KEY);
        const seen = await store.readIntake("in1", { key: KEY });
        expect(seen.run).toEqual(await store.getRun("in1"));
        expect(seen.session).toEqual(session);
        // a new run id in a known session, named by id; an unknown session
        expect(await store.readIntake("in2", { sessionId: session?.sessionId ?? "" })).toEqual({ session });
        expect(await store.readIntake("in1", { key: OTHER })).toEqual({ run: seen.run });
        expect(await store.readIntake("in2", { sessionId: "no-such-id" })).toEqual({});
      });

      it("updateRuns applies every patch, each to its own record, and another store sees them all", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.createRun(run("host"));
        await store.createRun(run("merged"));
        await store.createRun(run("untouched"));
        await store.updateRuns([
          { runId: "host", patch: { status: "running", startedAt: 4 } },
          { runId: "merged", patch: { status: "running", startedAt: 4 } },
        ]);
        await store.updateRuns([
          { runId: "host", patch: { status: "ok", endedAt: 8, result: { payloads: [{ text: "done" }] } } },
          { runId: "merged", patch: { status: "ok", endedAt: 8, result: { mergedInto: "host" } } },
        ]);
        const other = await t.openAnother();
        expect(await other.getRun("host")).toMatchObject({ status: "ok", startedAt: 4, endedAt: 8 });
        expect(await other.getRun("merged")).toMatchObject({ status: "ok", result: { mergedInto: "host" } });
        expect((await other.getRun("untouched"))?.status).toBe("queued");
      });

      it("a turn's answer and its end land together: another store sees the answer, the end and the usage", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.createRun(run("t1", { status: "running", startedAt: 2 }));
        await store.createRun(run("m1", { status: "running", startedAt: 2 }));
        const stored = await store.appendTranscriptAndEnd([{ ...msgRow(KEY, "the answer", 6), runId: "t1" }], {
          patches: [
            { runId: "t1", patch: { status: "ok", endedAt: 7, result: { payloads: [{ text: "the answer" }] } } },
            { runId: "m1", patch: { status: "ok", endedAt: 7, result: { mergedInto: "t1" } } },
          ],
          usage: { sessionKey: KEY, input: 3, output: 4, total: 7, updatedAt: 7 },
        });
        expect(stored.map((r) => r.seq)).toEqual([1]);
        const other = await t.openAnother();
        expect((await other.readTranscript(KEY)).map((r) => [r.seq, r.runId, r.message])).toEqual([
          [1, "t1", user("the answer")],
        ]);
        expect(await other.getRun("t1")).toMatchObject({
          status: "ok",
          endedAt: 7,
          result: { payloads: [{ text: "the answer" }] },
        });
        expect(await other.getRun("m1")).toMatchObject({ status: "ok", result: { mergedInto: "t1" } });
        expect(await other.getSession(KEY)).toMatchObject({
          inputTokens: 3,
          outputTokens: 4,
          totalTokens: 7,
          updatedAt: 7,
        });
      });

      it("a turn's answer goes after the session's appends issued before it, and one issued after goes after it", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.createRun(run("t1", { status: "running", startedAt: 2 }));
        // issued without waiting, as the run loop does: the store applies a session's appends in call order
        const writes = [
          store.appendTranscript([msgRow(KEY, "tool call")]),
          store.appendTranscriptAndEnd([msgRow(KEY, "answer")], {
            patches: [{ runId: "t1", patch: { status: "ok", endedAt: 3 } }],
          }),
          store.appendTranscript([msgRow(KEY, "next turn")]),
        ];
        expect((await Promise.all(writes)).map((rows) => rows.map((r) => r.seq))).toEqual([[1], [2], [3]]);
        expect((await store.readTranscript(KEY)).map((r) => r.message)).toEqual([
          user("tool call"),
          user("answer"),
          user("next turn"),
        ]);
        expect((await store.getRun("t1"))?.status).toBe("ok");
      });

      it("an answer for a session that is not there writes neither the answer nor the run's end", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.createRun(run("t1", { status: "running", startedAt: 2 }));
        await expect(
          store.appendTranscriptAndEnd([msgRow("agent:main:gone", "answer")], {
            patches: [{ runId: "t1", patch: { status: "ok", endedAt: 3 } }],
            usage: { sessionKey: KEY, input: 1, output: 1, total: 2, updatedAt: 3 },
          }),
        ).rejects.toThrow(/unknown session agent:main:gone/);
        const other = await t.openAnother();
        expect(await other.getRun("t1")).toMatchObject({ status: "running" });
        expect(await other.getSession(KEY)).toMatchObject({ totalTokens: 0, updatedAt: 1 });
        expect(await other.readTranscript("agent:main:gone")).toEqual([]);
      });

      it("updateRuns with a turn's usage adds it to the session's counters in the same write", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.createRun(run("t1"));
        await store.createRun(run("t2"));
        const usage = (total: number, at: number) => ({
          sessionKey: KEY,
          input: total - 1,
          output: 1,
          total,
          updatedAt: at,
        });
        await store.updateRuns([{ runId: "t1", patch: { status: "ok", endedAt: 5 } }], usage(10, 5));
        await store.updateRuns([{ runId: "t2", patch: { status: "ok", endedAt: 9 } }], usage(7, 9));
        const other = await t.openAnother();
        expect(await other.getSession(KEY)).toMatchObject({
          inputTokens: 15,
          outputTokens: 2,
          totalTokens: 17,
          updatedAt: 9,
        });
        expect((await other.getRun("t2"))?.status).toBe("ok");
      });

      it("recent runs come newest accepted first, of one session when asked", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.ensureSession(OTHER, "main", 1);
        await store.createRun(run("old", { acceptedAt: 1 }));
        await store.createRun(run("mid", { acceptedAt: 2, sessionKey: OTHER }));
        await store.createRun(run("new", { acceptedAt: 3 }));
        expect((await store.listRecentRuns({ limit: 10 })).map((r) => r.runId)).toEqual(["new", "mid", "old"]);
        expect((await store.listRecentRuns({ limit: 2 })).map((r) => r.runId)).toEqual(["new", "mid"]);
        expect((await store.listRecentRuns({ limit: 10, sessionKey: KEY })).map((r) => r.runId)).toEqual([
          "new",
          "old",
        ]);
      });

      it("cron runs are pruned per job or all at once, keeping the newest and never a running one", async () => {
        for (let i = 1; i <= 6; i++) await store.addCronRun({ jobId: "a", scheduledAt: i * 10, status: "ok" });
        // the oldest of "b" is still running: it stays whatever its age
        await store.addCronRun({ jobId: "b", scheduledAt: 1, status: "running" });
        for (let i = 2; i <= 4; i++) await store.addCronRun({ jobId: "b", scheduledAt: i, status: "skipped" });
        const times = async (job: string) =>
          ((await store.recentCronRuns([job], 100)).get(job) ?? []).map((r) => r.scheduledAt);
        expect(await store.pruneCronRuns(2, "a")).toBe(4);
        expect(await times("a")).toEqual([60, 50]);
        expect(await times("b")).toEqual([4, 3, 2, 1]);
        expect(await store.pruneCronRuns(1)).toBe(3);
        expect(await times("a")).toEqual([60]);
        expect(await times("b")).toEqual([4, 1]);
      });

      it("a stored cron job's spec is replaced by id (cron.update), and an unknown id changes nothing", async () => {
        const spec = { id: "nightly", schedule: "0 3 * * *", message: "go" };
        await store.addCronJob({ spec, createdAt: 1 });
        expect(await store.updateCronJob({ ...spec, enabled: false })).toBe(true);
        expect(await store.updateCronJob({ ...spec, id: "nobody" })).toBe(false);
        expect(await store.listCronJobs()).toEqual([{ spec: { ...spec, enabled: false }, createdAt: 1 }]);
      });

      it("crash leftovers: runs and cron runs left running by a store that went away are found by the next one", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.createRun(run("left", { status: "running", startedAt: 2 }));
        await store.createRun(run("waiting"));
        await store.addCronJob({ spec: { id: "nightly", schedule: "0 3 * * *", message: "go" }, createdAt: 1 });
        const cronRun = await store.addCronRun({ jobId: "nightly", scheduledAt: 5, startedAt: 5, status: "running" });
        const next = await t.openAnother();
        expect((await next.listRuns({ statuses: ["running"] })).map((r) => r.runId)).toEqual(["left"]);
        expect((await next.listRuns({ statuses: ["queued"] })).map((r) => r.runId)).toEqual(["waiting"]);
        expect((await next.runningCronRuns()).map((r) => r.id)).toEqual([cronRun]);
      });
    });

    describe("events with seq", () => {
      it("stores events once per (run, seq), reads them in seq order after a seq, and knows the last seq", async () => {
        await store.appendRunEvents([event("r1", 2), event("r1", 1), event("r2", 1), event("r1", 3)]);
        const again = await store.appendRunEvents([event("r1", 3), event("r1", 4)]);
        expect(again.ignored).toBe(1);
        expect((await store.readRunEvents("r1")).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
        expect((await store.readRunEvents("r1", { afterSeq: 2, limit: 1 })).map((e) => e.seq)).toEqual([3]);
        expect((await store.readRunEvents("r1"))[0].json).toBe(event("r1", 1).json);
        expect(await store.lastRunEventSeq("r1")).toBe(4);
        expect(await store.lastRunEventSeq("nobody")).toBe(0);
      });

      it("a batch of hundreds of events, some stored already, stores each new one once and counts the rest", async () => {
        await store.appendRunEvents([event("big", 5), event("big", 70), event("big", 200)]);
        const batch = Array.from({ length: 300 }, (_, i) => event("big", 300 - i));
        // the first write wins: a stored event's JSON is kept even when a later batch carries other JSON
        batch[100] = { ...batch[100], json: "{}" };
        const { ignored } = await store.appendRunEvents(batch);
        expect(ignored).toBe(3);
        const stored = await store.readRunEvents("big");
        expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
        expect(stored[199].json).toBe(event("big", 200).json);
      });

      it("one ledger batch stores run events, audit rows and cost rows together, as their own appends would", async () => {
        await store.appendRunEvents([event("r1", 1)]);
        const row = cost({ runId: "r1" });
        const { ignored } = await store.appendLedgerBatch({
          runEvents: [event("r1", 1), event("r1", 2)],
          audit: [audit({ occurredAt: 10 }), audit({ occurredAt: 20 })],
          cost: [row],
        });
        expect(ignored).toBe(1);
        expect((await store.readRunEvents("r1")).map((e) => e.seq)).toEqual([1, 2]);
        expect((await store.listAuditEvents({ limit: 10 })).map((r) => r.occurredAt)).toEqual([20, 10]);
        expect((await store.listCostRows({ limit: 10 })).map((r) => r.id)).toEqual([row.id]);
      });

      it("a ledger batch the store refuses stores none of its parts", async () => {
        // an audit row without its actor breaks NOT NULL: the events and the cost row before it are not kept either
        const broken = { ...audit(), actor: null } as unknown as AuditEventInput;
        await refused(() =>
          store.appendLedgerBatch({ runEvents: [event("r9", 1)], audit: [broken], cost: [cost({ runId: "r9" })] }),
        );
        expect(await store.readRunEvents("r9")).toEqual([]);
        expect(await store.listCostRows({ limit: 10 })).toEqual([]);
        expect(await store.listAuditEvents({ limit: 10 })).toEqual([]);
      });
    });

    describe("audit rows", () => {
      it("are numbered in append order, listed newest first, and filtered", async () => {
        await store.appendAuditEvents([
          audit({ runId: "a", occurredAt: 10 }),
          audit({ runId: "b", occurredAt: 20, action: "tool.action.started", toolName: "read" }),
          audit({ runId: "a", occurredAt: 30, action: "agent.run.finished", status: "succeeded" }),
        ]);
        const all = await store.listAuditEvents({ limit: 10 });
        expect(all.map((r) => r.runId)).toEqual(["a", "b", "a"]);
        expect(all[0].sequence).toBeGreaterThan(all[1].sequence);
        expect(all[1]).toMatchObject({ kind: "tool_action", toolName: "read" });
        expect((await store.listAuditEvents({ runId: "a", limit: 10 })).length).toBe(2);
        expect((await store.listAuditEvents({ after: 20, limit: 10 })).map((r) => r.occurredAt)).toEqual([30, 20]);
        const older = await store.listAuditEvents({ beforeSequence: all[0].sequence, limit: 1 });
        expect(older.map((r) => r.sequence)).toEqual([all[1].sequence]);
      });
    });

    describe("retention", () => {
      it("pruning runs drops finished runs past their age and count, with their events, never unfinished ones", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.createRun(run("old", { status: "ok", acceptedAt: 1, endedAt: 10 }));
        await store.createRun(run("mid", { status: "error", acceptedAt: 500, endedAt: 510 }));
        await store.createRun(run("new", { status: "ok", acceptedAt: 900, endedAt: 910 }));
        await store.createRun(run("queued", { acceptedAt: 2 }));
        await store.appendRunEvents([event("old", 1), event("new", 1)]);
        const byAge = await store.pruneRuns({ now: 1000, maxAgeMs: 800, maxCount: 100 });
        expect(byAge).toBe(1);
        expect(await store.getRun("old")).toBeUndefined();
        expect(await store.readRunEvents("old")).toEqual([]);
        expect(await store.pruneRuns({ now: 1000, maxAgeMs: 10_000, maxCount: 1 })).toBe(1);
        expect(await store.getRun("mid")).toBeUndefined();
        expect((await store.getRun("new"))?.status).toBe("ok");
        expect((await store.getRun("queued"))?.status).toBe("queued");
        expect((await store.readRunEvents("new")).length).toBe(1);
      });

      it("pruning audit rows drops the old and the surplus, and a sequence is never handed out again", async () => {
        await store.appendAuditEvents([
          audit({ occurredAt: 1 }),
          audit({ occurredAt: 500 }),
          audit({ occurredAt: 900 }),
        ]);
        const before = await store.listAuditEvents({ limit: 10 });
        expect(await store.pruneAuditEvents({ now: 1000, maxAgeMs: 600, maxRows: 100 })).toBe(1);
        expect(await store.pruneAuditEvents({ now: 1000, maxAgeMs: 10_000, maxRows: 1 })).toBe(1);
        const left = await store.listAuditEvents({ limit: 10 });
        expect(left.map((r) => r.occurredAt)).toEqual([900]);
        await store.pruneAuditEvents({ now: 1000, maxAgeMs: 10_000, maxRows: 0 });
        await store.appendAuditEvents([audit({ occurredAt: 950 })]);
        const [fresh] = await store.listAuditEvents({ limit: 1 });
        expect(fresh.sequence).toBeGreaterThan(before[0].sequence);
      });
    });

    describe("operator settings", () => {
      it("a setting written by one store is read by another under its prefix, in key order; a second write replaces it", async () => {
        await store.putOperatorSetting({ key: "skills.weather", value: '{"enabled":false}', updatedAt: 1 });
        await store.putOperatorSetting({ key: "exec.allowAlways.main.bb", value: '{"n":2}', updatedAt: 2 });
        await store.putOperatorSetting({ key: "exec.allowAlways.main.aa", value: '{"n":1}', updatedAt: 3 });
        await store.putOperatorSetting({ key: "exec.allowAlwaysX", value: "{}", updatedAt: 4 });
        const other = await t.openAnother();
        expect(
          (await other.listOperatorSettings("exec.allowAlways.")).map((r) => [r.key, r.value, r.updatedAt]),
        ).toEqual([
          ["exec.allowAlways.main.aa", '{"n":1}', 3],
          ["exec.allowAlways.main.bb", '{"n":2}', 2],
        ]);
        await other.putOperatorSetting({ key: "skills.weather", value: '{"enabled":true}', updatedAt: 9 });
        expect(await store.listOperatorSettings("skills.")).toEqual([
          { key: "skills.weather", value: '{"enabled":true}', updatedAt: 9 },
        ]);
        expect(await store.listOperatorSettings("plugins.")).toEqual([]);
      });
    });

    describe("auth profile health", () => {
      it("a cooldown written by one store is read by another; clearing one model keeps the other and lastUsed", async () => {
        await store.putAuthHealth({
          profileId: "openai:a",
          model: "gpt-x",
          until: 31_000,
          reason: "rate_limit",
          errorCount: 1,
          lastFailureAt: 1_000,
        });
        await store.putAuthHealth({
          profileId: "openai:a",
          model: "gpt-y",
          until: 5_000,
          reason: "rate_limit",
          errorCount: 2,
        });
        await store.touchAuthProfile("openai:a", 900);
        await store.touchAuthProfile("openai:a", 800); // an older use never moves lastUsed back
        const other = await t.openAnother();
        expect(await other.listAuthHealth()).toEqual([
          { profileId: "openai:a", model: "", errorCount: 0, lastUsed: 900 },
          {
            profileId: "openai:a",
            model: "gpt-x",
            until: 31_000,
            reason: "rate_limit",
            errorCount: 1,
            lastFailureAt: 1_000,
          },
          { profileId: "openai:a", model: "gpt-y", until: 5_000, reason: "rate_limit", errorCount: 2 },
        ]);
        expect(await other.clearAuthHealth("openai:a", "gpt-x")).toBe(1);
        expect(await other.clearAuthHealth("openai:a", "gpt-x")).toBe(0); // nothing left to clear: no write counted
        const rows = await store.listAuthHealth();
        expect(rows.find((r) => r.model === "gpt-x")).toEqual({ profileId: "openai:a", model: "gpt-x", errorCount: 0 });
        expect(rows.find((r) => r.model === "gpt-y")?.until).toBe(5_000);
        expect(rows.find((r) => r.model === "")?.lastUsed).toBe(900);
      });

      it("a whole-profile disable is overwritten in place and cleared with every model of the profile", async () => {
        await store.putAuthHealth({
          profileId: "anthropic:w",
          model: "",
          until: 100,
          reason: "billing",
          errorCount: 1,
        });
        await store.putAuthHealth({
          profileId: "anthropic:w",
          model: "",
          until: 200,
          reason: "billing",
          errorCount: 2,
        });
        await store.putAuthHealth({
          profileId: "anthropic:w",
          model: "m",
          until: 50,
          reason: "rate_limit",
          errorCount: 1,
        });
        await store.putAuthHealth({ profileId: "anthropic:z", model: "", until: 70, reason: "auth", errorCount: 1 });
        expect((await store.listAuthHealth()).filter((r) => r.profileId === "anthropic:w" && r.model === "")).toEqual([
          { profileId: "anthropic:w", model: "", until: 200, reason: "billing", errorCount: 2 },
        ]);
        expect(await store.clearAuthHealth("anthropic:w")).toBe(2);
        const left = (await store.listAuthHealth()).filter((r) => r.until !== undefined);
        expect(left.map((r) => r.profileId)).toEqual(["anthropic:z"]);
      });

      it("a session keeps its pinned and its user-pinned auth profile, and either can be cleared", async () => {
        await store.ensureSession(KEY, "main", 1);
        await store.updateSession(KEY, { authProfile: "openai:b", authProfileOverride: "openai:a" });
        expect(await store.getSession(KEY)).toMatchObject({ authProfile: "openai:b", authProfileOverride: "openai:a" });
        await store.updateSession(KEY, { authProfile: undefined });
        const s = await store.getSession(KEY);
        expect(s?.authProfile).toBeUndefined();
        expect(s?.authProfileOverride).toBe("openai:a");
      });
    });

    describe("cost ledger", () => {
      it("a model call's row reads back with its tokens, cost, token identity and auth profile", async () => {
        const row = cost({ token: "tok:ab12", authProfile: "fake:work", cacheReadTokens: 7 });
        await store.appendCostRows([row, cost({ costUsd: undefined, model: "unpriced" })]);
        const rows = await store.listCostRows({ limit: 10 });
        expect(rows.map(({ seq: _, ...r }) => r)).toEqual([row, expect.objectContaining({ model: "unpriced" })]);
        expect(rows[1].costUsd).toBeUndefined();
        expect(rows[1].token).toBeUndefined();
        expect(rows[1].seq).toBeGreaterThan(rows[0].seq);
      });

      it("a row written twice (same id) is stored once", async () => {
        const row = cost();
        await store.appendCostRows([row]);
        await store.appendCostRows([row, cost()]);
        expect((await store.listCostRows({ limit: 10 })).length).toBe(2);
      });

      it("sums a window of one agent, session or token; unpriced calls count tokens only", async () => {
        await store.appendCostRows([
          cost({ ts: 10, agentId: "main", costUsd: 0.25 }),
          cost({ ts: 20, agentId: "main", costUsd: undefined, totalTokens: 30, token: "tok:a" }),
          cost({ ts: 30, agentId: "ops", costUsd: 1, sessionKey: OTHER, token: "tok:a" }),
        ]);
        expect(await store.sumCost({ agentId: "main" })).toEqual({
          usd: 0.25,
          tokens: 150,
          calls: 2,
          unpricedCalls: 1,
        });
        expect(await store.sumCost({ since: 20 })).toEqual({ usd: 1, tokens: 150, calls: 2, unpricedCalls: 1 });
        expect(await store.sumCost({ since: 10, until: 30 })).toMatchObject({ calls: 2 });
        expect(await store.sumCost({ token: "tok:a" })).toMatchObject({ usd: 1, tokens: 150 });
        expect(await store.sumCost({ sessionKey: OTHER })).toMatchObject({ usd: 1, calls: 1 });
        expect(await store.sumCost({ agentId: "nobody" })).toEqual({ usd: 0, tokens: 0, calls: 0, unpricedCalls: 0 });
      });

      it("a sum names the recent rows it counted (newest first), so a call announced later is not counted twice", async () => {
        const old = cost({ ts: 10, agentId: "main" });
        const recent = cost({ ts: 40, agentId: "main" });
        const newest = cost({ ts: 50, agentId: "main" });
        const otherAgent = cost({ ts: 45, agentId: "ops" });
        await store.appendCostRows([old, newest, recent, otherAgent]);
        expect(await store.sumCost({ agentId: "main", since: 0, until: 100, idsSince: 30 })).toEqual({
          usd: 1.5,
          tokens: 360,
          calls: 3,
          unpricedCalls: 0,
          ids: [newest.id, recent.id],
        });
        // the window's own start is later than idsSince: only rows in the window are named
        expect((await store.sumCost({ agentId: "main", since: 45, idsSince: 30 })).ids).toEqual([newest.id]);
        expect((await store.sumCost({ agentId: "nobody", idsSince: 0 })).ids).toEqual([]);
        expect(await store.sumCost({ agentId: "main" })).not.toHaveProperty("ids");
      });

      it("a listing continues after the last seq it returned", async () => {
        await store.appendCostRows([cost({ ts: 1 }), cost({ ts: 2 }), cost({ ts: 3 })]);
        const first = await store.listCostRows({ limit: 2 });
        const rest = await store.listCostRows({ limit: 2, afterSeq: first[1].seq });
        expect([...first, ...rest].map((r) => r.ts)).toEqual([1, 2, 3]);
      });

      it("pruning drops rows past their age and the oldest beyond the row cap", async () => {
        await store.appendCostRows([cost({ ts: 1 }), cost({ ts: 500 }), cost({ ts: 900 }), cost({ ts: 950 })]);
        expect(await store.pruneCostRows({ now: 1000, maxAgeMs: 600, maxRows: 100 })).toBe(1);
        expect(await store.pruneCostRows({ now: 1000, maxAgeMs: 10_000, maxRows: 2 })).toBe(1);
        expect((await store.listCostRows({ limit: 10 })).map((r) => r.ts)).toEqual([900, 950]);
      });

      it("two nodes' rows sum together", async () => {
        const other = await t.openAnother();
        await Promise.all([store.appendCostRows([cost()]), other.appendCostRows([cost(), cost()])]);
        expect((await other.sumCost({ agentId: "main" })).calls).toBe(3);
      });
    });

    describe("concurrent writers", () => {
      it("two stores on one database appending to one session get distinct, gapless seqs", async () => {
        await store.ensureSession(KEY, "main", 1);
        const other = await t.openAnother();
        await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            (i % 2 === 0 ? store : other).appendTranscript([msgRow(KEY, `w${i}-a`), msgRow(KEY, `w${i}-b`)]),
          ),
        );
        const rows = await store.readTranscript(KEY);
        expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
        // each append's rows stay together: a writer's batch is never interleaved with another's
        for (let i = 0; i < rows.length; i += 2) {
          const a = String(rows[i].message?.content);
          expect(rows[i + 1].message?.content).toBe(a.replace(/-a$/, "-b"));
        }
      });

      it("one store's appends to one session, issued without waiting, are stored in call order", async () => {
        await store.ensureSession(KEY, "main", 1);
        const appended = await Promise.all(
          Array.from({ length: 12 }, (_, i) => store.appendTranscript([msgRow(KEY, `c${i}`)])),
        );
        expect(appended.map(([r]) => r.seq)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
        const rows = await store.readTranscript(KEY);
        expect(rows.map((r) => r.message?.content)).toEqual(Array.from({ length: 12 }, (_, i) => `c${i}`));
      });

      it("appends after another process wrote or reset the session continue its seq in its current generation", async () => {
        const first = (await store.ensureSession(KEY, "main", 1)).generation;
        const other = await t.openAnother();
        await store.appendTranscript([msgRow(KEY, "mine-1")]);
        await other.appendTranscript([msgRow(KEY, "theirs-1"), msgRow(KEY, "theirs-2")]);
        const [next] = await store.appendTranscript([msgRow(KEY, "mine-2")]);
        expect([next.generation, next.seq]).toEqual([first, 4]);
        const generation = await other.resetSession(KEY, 5, "sessions.reset");
        const [afterReset] = await store.appendTranscript([msgRow(KEY, "mine-3")]);
        expect([afterReset.generation, afterReset.seq]).toEqual([generation, 1]);
        expect((await other.readTranscript(KEY)).map((r) => r.message?.content)).toEqual(["mine-3"]);
      });

      it("an append naming an unknown session stores none of its rows", async () => {
        await store.ensureSession(KEY, "main", 1);
        await expect(
          store.appendTranscript([msgRow(KEY, "kept out"), msgRow("agent:main:nobody", "x")]),
        ).rejects.toThrow(/unknown session agent:main:nobody/);
        expect(await store.readTranscript(KEY)).toEqual([]);
      });

      it("audit sequences from two stores never collide", async () => {
        const other = await t.openAnother();
        await Promise.all(
          Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? store : other).appendAuditEvents([audit(), audit()])),
        );
        const rows = await other.listAuditEvents({ limit: 100 });
        expect(new Set(rows.map((r) => r.sequence)).size).toBe(20);
      });
    });
  });
}
