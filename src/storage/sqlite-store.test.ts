/*
 * The SQLite store on real files in temp directories. Cross-process visibility is checked with real `node` children
 * that open the same file through the built module (dist/storage/sqlite-store.js): run `npm run build` first.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "../providers/types.js";
import { migrations } from "./migrations.js";
import { openStore, SqliteStore } from "./sqlite-store.js";
import type { RunRecord, TranscriptRow } from "./types.js";

const execFileAsync = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const builtStore = path.resolve(here, "../../dist/storage/sqlite-store.js");

let dir: string;
let file: string;
const open: SqliteStore[] = [];

function store(): SqliteStore {
  const s = new SqliteStore(file);
  open.push(s);
  return s;
}

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-store-"));
  file = path.join(dir, "state", "loopgate.sqlite");
});

afterEach(() => {
  for (const s of open.splice(0)) s.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const user = (content: string): ChatMessage => ({ role: "user", content });
const said = (text: string): ChatMessage => ({ role: "assistant", content: [{ type: "text", text }] });
const row = (sessionKey: string, message: ChatMessage, runId = "r1") => ({
  sessionKey,
  kind: "message" as const,
  runId,
  createdAt: 1000,
  message,
});
const contents = (rows: TranscriptRow[]) =>
  rows.map((r) => {
    if (!r.message) return `[${r.kind}] ${r.text}`;
    return r.message.role === "user" ? r.message.content : r.message.role;
  });

describe("schema and migrations", () => {
  it("creates the schema in a new directory, once; reopening the file keeps the data", () => {
    const first = store();
    first.ensureSession("agent:main:main", "main", 1);
    first.appendTranscript([row("agent:main:main", user("remember me"))]);
    first.close();

    const again = store();
    const alsoOpen = store(); // two handles at once are fine too
    expect(contents(again.readTranscript("agent:main:main"))).toEqual(["remember me"]);
    expect(alsoOpen.getSession("agent:main:main")?.agentId).toBe("main");

    const db = new Database(file, { readonly: true });
    try {
      expect(db.pragma("user_version", { simple: true })).toBe(Math.max(...migrations.map((m) => m.version)));
      expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
      // sqlite_sequence: audit_events' and cost_ledger's AUTOINCREMENT keep the highest sequence there
      expect(tables).toEqual([
        "audit_events",
        "auth_health",
        "blobs",
        "cost_ledger",
        "cron_jobs",
        "cron_runs",
        "operator_settings",
        "run_events",
        "runs",
        "sessions",
        "sqlite_sequence",
        "transcript",
      ]);
    } finally {
      db.close();
    }
  });

  it("a database an older version made (schema 2) gains the run events table on open, its data kept", () => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const old = new Database(file);
    for (const m of migrations.filter((m) => m.version <= 2)) old.exec(m.sql);
    old.pragma("user_version = 2");
    old
      .prepare("INSERT INTO runs (run_id, session_key, status, accepted_at, params) VALUES ('r1', 'k', 'ok', 1, '{}')")
      .run();
    old.close();
    const s = store();
    expect(s.getRun("r1")?.status).toBe("ok");
    s.appendRunEvents([{ runId: "r1", seq: 1, ts: 1, sessionKey: "k", stream: "lifecycle", json: "{}" }]);
    expect(s.lastRunEventSeq("r1")).toBe(1);
    const db = new Database(file, { readonly: true });
    try {
      expect(db.pragma("user_version", { simple: true })).toBe(migrations.at(-1)?.version);
    } finally {
      db.close();
    }
  });

  it("openStore puts the database in the state directory", () => {
    const s = openStore(path.join(dir, "state"));
    open.push(s);
    expect(s.file).toBe(path.join(dir, "state", "loopgate.sqlite"));
    expect(fs.existsSync(s.file)).toBe(true);
  });
});

describe("cron jobs and runs", () => {
  it("stores added jobs once, lists each job's newest runs, prunes the oldest and removes a job with its runs", () => {
    const s = store();
    const spec = { id: "nightly", schedule: "0 3 * * *", message: "report" };
    expect(s.addCronJob({ spec, createdAt: 5 })).toBe(true);
    expect(s.addCronJob({ spec: { ...spec, message: "other" }, createdAt: 6 })).toBe(false);
    expect(s.listCronJobs()).toEqual([{ spec, createdAt: 5 }]);
    for (const at of [100, 300, 200]) s.addCronRun({ jobId: "nightly", scheduledAt: at, status: "ok" });
    const id = s.addCronRun({ jobId: "other", scheduledAt: 50, status: "running", runId: "r-1" });
    s.updateCronRun(id, { status: "timeout", errorKind: "timeout", endedAt: 60 });
    const recent = s.recentCronRuns(["nightly", "other", "none"], 2);
    expect(recent.get("nightly")?.map((r) => r.scheduledAt)).toEqual([300, 200]);
    expect(recent.get("other")?.[0]).toMatchObject({
      status: "timeout",
      errorKind: "timeout",
      endedAt: 60,
      runId: "r-1",
    });
    expect(recent.has("none")).toBe(false);
    expect(s.runningCronRuns()).toEqual([]);
    expect(s.pruneCronRuns(1)).toBe(2);
    expect(
      s
        .recentCronRuns(["nightly"], 10)
        .get("nightly")
        ?.map((r) => r.scheduledAt),
    ).toEqual([300]);
    expect(s.removeCronJob("nightly")).toBe(true);
    expect(s.recentCronRuns(["nightly"], 10).size).toBe(0);
    expect(s.removeCronJob("nightly")).toBe(false);
  });
});

describe("sessions", () => {
  it("ensureSession creates once and returns the same session (id, createdAt) afterwards", () => {
    const s = store();
    const created = s.ensureSession("agent:main:work", "main", 100);
    expect(created).toMatchObject({
      key: "agent:main:work",
      agentId: "main",
      generation: 1,
      createdAt: 100,
      totalTokens: 0,
    });
    const again = s.ensureSession("agent:main:work", "main", 200);
    expect(again.sessionId).toBe(created.sessionId);
    expect(again.createdAt).toBe(100);
    expect(s.getSessionById(created.sessionId)?.key).toBe("agent:main:work");
  });

  it("updates metadata and lists the most recently updated first", () => {
    const s = store();
    s.ensureSession("agent:main:a", "main", 1);
    s.ensureSession("agent:ops:b", "ops", 2);
    s.updateSession("agent:main:a", {
      updatedAt: 50,
      modelOverride: "openai/gpt-4o",
      totalTokens: 1234,
      label: "Alpha",
    });
    expect(s.getSession("agent:main:a")).toMatchObject({
      modelOverride: "openai/gpt-4o",
      totalTokens: 1234,
      label: "Alpha",
    });
    expect(s.listSessions().map((x) => x.key)).toEqual(["agent:main:a", "agent:ops:b"]);
    expect(s.listSessions({ agentId: "ops" }).map((x) => x.key)).toEqual(["agent:ops:b"]);
    s.updateSession("agent:main:a", { label: undefined });
    expect(s.getSession("agent:main:a")?.label).toBeUndefined();
    expect(() => s.updateSession("agent:main:a", { nonsense: 1 } as never)).toThrow(/unknown field nonsense/);
  });

  it("deleting a session removes its transcript", () => {
    const s = store();
    s.ensureSession("agent:main:tmp", "main", 1);
    s.appendTranscript([row("agent:main:tmp", user("bye"))]);
    expect(s.deleteSession("agent:main:tmp")).toBe(true);
    expect(s.getSession("agent:main:tmp")).toBeUndefined();
    expect(s.readTranscript("agent:main:tmp")).toEqual([]);
    expect(s.deleteSession("agent:main:tmp")).toBe(false);
  });
});

describe("transcript", () => {
  it("sequence numbers are per session, start at 1 and increase by one", () => {
    const s = store();
    s.ensureSession("agent:main:a", "main", 1);
    s.ensureSession("agent:main:b", "main", 1);
    const written = s.appendTranscript([
      row("agent:main:a", user("a1")),
      row("agent:main:b", user("b1")),
      row("agent:main:a", said("a2")),
    ]);
    expect(written.map((r) => [r.sessionKey, r.seq])).toEqual([
      ["agent:main:a", 1],
      ["agent:main:b", 1],
      ["agent:main:a", 2],
    ]);
    s.appendTranscript([row("agent:main:a", user("a3"))]);
    s.appendTranscript([row("agent:main:b", said("b2"))]);
    expect(s.readTranscript("agent:main:a").map((r) => r.seq)).toEqual([1, 2, 3]);
    expect(s.readTranscript("agent:main:b").map((r) => r.seq)).toEqual([1, 2]);
    expect(s.readTranscript("agent:main:a")[1].message).toEqual(said("a2"));
  });

  it("refuses rows for a session that does not exist, writing none of the batch", () => {
    const s = store();
    s.ensureSession("agent:main:a", "main", 1);
    expect(() => s.appendTranscript([row("agent:main:a", user("ok")), row("agent:main:ghost", user("no"))])).toThrow(
      /unknown session agent:main:ghost/,
    );
    expect(s.readTranscript("agent:main:a")).toEqual([]);
  });

  it("reads the newest n rows oldest first, by kind and before a seq", () => {
    const s = store();
    s.ensureSession("k", "main", 1);
    s.appendTranscript(["m1", "m2", "m3", "m4"].map((t) => row("k", user(t))));
    s.appendTranscript([{ sessionKey: "k", kind: "compaction", createdAt: 2, text: "summary of m1..m4" }]);
    expect(contents(s.readTranscript("k", { limit: 2 }))).toEqual(["m4", "[compaction] summary of m1..m4"]);
    expect(contents(s.readTranscript("k", { kinds: ["message"], limit: 2 }))).toEqual(["m3", "m4"]);
    expect(contents(s.readTranscript("k", { beforeSeq: 3 }))).toEqual(["m1", "m2"]);
  });

  it("the history since a seq comes back oldest first even when SQLite scans the table the other way", () => {
    const s = store();
    s.ensureSession("k", "main", 1);
    s.appendTranscript(["m1", "m2", "m3", "m4"].map((t) => row("k", user(t))));
    // the read without a limit has no ORDER BY (bench/README.md: an ORDER BY recompiles it per call); this pragma
    // makes SQLite return such reads in reverse, as a different plan might
    (s as unknown as { db: Database.Database }).db.pragma("reverse_unordered_selects = ON");
    expect(contents(s.readTranscript("k", { afterSeq: 1 }))).toEqual(["m2", "m3", "m4"]);
    expect(contents(s.readTranscript("k", { generation: 1, afterSeq: 2, imageData: true }))).toEqual(["m3", "m4"]);
    expect(contents(s.readTranscript("k", { kinds: ["message"] }))).toEqual(["m1", "m2", "m3", "m4"]);
    expect(contents(s.readTranscript("k", { limit: 2 }))).toEqual(["m3", "m4"]);
  });

  it("a reset (/new) starts a new generation and keeps the old rows", () => {
    const s = store();
    s.ensureSession("agent:main:main", "main", 1);
    s.appendTranscript([row("agent:main:main", user("old question")), row("agent:main:main", said("old answer"))]);

    expect(s.resetSession("agent:main:main", 500, "/new")).toBe(2);
    expect(s.getSession("agent:main:main")?.generation).toBe(2);
    expect(s.readTranscript("agent:main:main")).toEqual([]); // the model starts fresh

    s.appendTranscript([row("agent:main:main", user("fresh start"))]);
    const current = s.readTranscript("agent:main:main");
    expect(current.map((r) => [r.generation, r.seq])).toEqual([[2, 1]]);
    expect(contents(current)).toEqual(["fresh start"]);

    // the old generation is still there, closed by a reset marker
    const old = s.readTranscript("agent:main:main", { generation: 1 });
    expect(contents(old)).toEqual(["old question", "assistant", "[reset] /new"]);
    expect(old.map((r) => r.seq)).toEqual([1, 2, 3]);

    expect(() => s.resetSession("agent:main:nobody", 1, "/new")).toThrow(/unknown session/);
  });
});

describe("image blobs", () => {
  const KEY = "agent:main:pics";
  const bytes = Buffer.from("\x89PNG\r\n\x1a\n pretend image bytes", "latin1");
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const withImage = (text: string): ChatMessage => ({
    role: "toolResult",
    toolCallId: "c1",
    toolName: "read",
    isError: false,
    content: [
      { type: "text", text },
      { type: "image", mimeType: "image/png", data: bytes.toString("base64"), width: 3, height: 2 },
    ],
  });
  const rawRows = () => {
    const db = new Database(file, { readonly: true });
    try {
      return {
        data: db.prepare("SELECT data FROM transcript WHERE session_key = ? ORDER BY seq").pluck().all(KEY) as string[],
        blobs: db.prepare("SELECT sha256, mime_type, bytes, data FROM blobs WHERE session_key = ?").all(KEY),
      };
    } finally {
      db.close();
    }
  };

  it("stores an image once as a blob; the row's JSON keeps a reference with its type and size", () => {
    const s = store();
    s.ensureSession(KEY, "main", 1);
    s.appendTranscript([row(KEY, withImage("first")), row(KEY, withImage("same picture again"))]);
    const { data, blobs } = rawRows();
    expect(blobs).toEqual([{ sha256, mime_type: "image/png", bytes: bytes.byteLength, data: bytes }]);
    expect(JSON.parse(data[0] ?? "{}").message.content[1]).toEqual({
      type: "image",
      mimeType: "image/png",
      blob: sha256,
      bytes: bytes.byteLength,
      width: 3,
      height: 2,
    });
    for (const d of data) expect(d).not.toContain(bytes.toString("base64"));
  });

  it("clients read the reference; the model's history gets the bytes back", () => {
    const s = store();
    s.ensureSession(KEY, "main", 1);
    s.appendTranscript([row(KEY, withImage("look"))]);
    const [listed] = s.readTranscript(KEY);
    expect(listed?.message?.role === "toolResult" && listed.message.content[1]).toEqual({
      type: "image",
      mimeType: "image/png",
      blob: sha256,
      bytes: bytes.byteLength,
      width: 3,
      height: 2,
    });
    const [context] = s.readContextRows(KEY);
    expect(context?.message).toEqual({
      ...withImage("look"),
      content: [
        { type: "text", text: "look" },
        {
          type: "image",
          mimeType: "image/png",
          data: bytes.toString("base64"),
          blob: sha256,
          bytes: bytes.byteLength,
          width: 3,
          height: 2,
        },
      ],
    });
  });

  it("a session's blobs are deleted with it, and another session's stay", () => {
    const s = store();
    s.ensureSession(KEY, "main", 1);
    s.ensureSession("agent:main:other", "main", 1);
    s.appendTranscript([row(KEY, withImage("mine")), row("agent:main:other", withImage("theirs"))]);
    s.deleteSession(KEY);
    expect(rawRows().blobs).toEqual([]);
    const [kept] = s.readContextRows("agent:main:other");
    expect(kept?.message?.role === "toolResult" && kept.message.content[1]).toMatchObject({
      data: bytes.toString("base64"),
    });
  });
});

describe("compaction rows", () => {
  const seed = (s: SqliteStore, key: string, texts: string[]) =>
    s.appendTranscript(texts.map((t) => row(key, t.startsWith("a:") ? said(t) : user(t))));

  it("a compaction is recorded with its summary and kept seq, and counted on the session", () => {
    const s = store();
    s.ensureSession("k", "main", 1);
    seed(s, "k", ["q1", "a:1", "q2", "a:2"]);
    const written = s.appendCompaction("k", { summary: "asked q1, q2", firstKeptSeq: 3, runId: "r9", createdAt: 7 });
    expect(written).toMatchObject({ seq: 5, kind: "compaction", text: "asked q1, q2", firstKeptSeq: 3, runId: "r9" });
    expect(s.getSession("k")?.compactionCount).toBe(1);

    // a second handle (as after a restart) reads the same row back
    const again = store();
    expect(again.readTranscript("k", { kinds: ["compaction"] })[0]).toMatchObject({ firstKeptSeq: 3, createdAt: 7 });
  });

  it("history read after a compaction starts at the summary, then the kept and newer messages", () => {
    const s = store();
    s.ensureSession("k", "main", 1);
    seed(s, "k", ["q1", "a:1", "q2", "a:2"]);
    s.appendCompaction("k", { summary: "asked q1", firstKeptSeq: 3, createdAt: 2 });
    seed(s, "k", ["q3"]);
    expect(contents(s.readContextRows("k"))).toEqual(["[compaction] asked q1", "q2", "assistant", "q3"]);

    // the next compaction supersedes the first one, whose row is inside the kept range and is not repeated
    s.appendCompaction("k", { summary: "asked q1, q2", firstKeptSeq: 4, createdAt: 3 });
    expect(contents(s.readContextRows("k"))).toEqual(["[compaction] asked q1, q2", "assistant", "q3"]);
    expect(s.getSession("k")?.compactionCount).toBe(2);
  });

  it("without a compaction the history is every message of the current generation", () => {
    const s = store();
    s.ensureSession("k", "main", 1);
    seed(s, "k", ["old"]);
    s.appendCompaction("k", { summary: "old stuff", firstKeptSeq: 2, createdAt: 2 });
    s.resetSession("k", 3, "/new");
    expect(s.readContextRows("k")).toEqual([]);
    seed(s, "k", ["fresh", "a:hi"]);
    expect(contents(s.readContextRows("k"))).toEqual(["fresh", "assistant"]);
    // the old generation still reads as it was
    expect(contents(s.readContextRows("k", { generation: 1 }))).toEqual(["[compaction] old stuff"]);
    expect(s.readContextRows("nobody")).toEqual([]);
  });

  it("a compaction that keeps nothing starts the history at the summary", () => {
    const s = store();
    s.ensureSession("k", "main", 1);
    seed(s, "k", ["q1", "a:1"]);
    s.appendCompaction("k", { summary: "all of it", firstKeptSeq: 3, createdAt: 2 });
    expect(contents(s.readContextRows("k"))).toEqual(["[compaction] all of it"]);
  });

  it("a compaction pointing past the transcript is refused and nothing is written or counted", () => {
    const s = store();
    s.ensureSession("k", "main", 1);
    seed(s, "k", ["q1", "a:1"]);
    expect(() => s.appendCompaction("k", { summary: "x", firstKeptSeq: 4, createdAt: 2 })).toThrow(
      /firstKeptSeq 4 of session k must be a row seq from 1 to 3 \(the last row is 2\)/,
    );
    expect(() => s.appendCompaction("k", { summary: "x", firstKeptSeq: 0, createdAt: 2 })).toThrow(/firstKeptSeq 0/);
    expect(() => s.appendCompaction("k", { summary: "  ", firstKeptSeq: 2, createdAt: 2 })).toThrow(/empty summary/);
    expect(() => s.appendCompaction("ghost", { summary: "x", firstKeptSeq: 1, createdAt: 2 })).toThrow(
      /unknown session ghost/,
    );
    expect(s.readTranscript("k").map((r) => r.kind)).toEqual(["message", "message"]);
    expect(s.getSession("k")?.compactionCount).toBe(0);
  });
});

describe("runs", () => {
  const run = (
    runId: string,
    status: RunRecord["status"],
    acceptedAt: number,
    extra: Partial<RunRecord> = {},
  ): RunRecord => ({
    runId,
    sessionKey: "agent:main:main",
    status,
    acceptedAt,
    params: { message: `message of ${runId}`, idempotencyKey: runId },
    ...extra,
  });

  it("creates, updates and reads back a run, with its JSON fields intact", () => {
    const s = store();
    s.createRun(run("r1", "queued", 10, { receipt: { kind: "started" } }));
    expect(s.getRun("r1")).toEqual({
      runId: "r1",
      sessionKey: "agent:main:main",
      status: "queued",
      acceptedAt: 10,
      params: { message: "message of r1", idempotencyKey: "r1" },
      receipt: { kind: "started" },
    });
    s.updateRun("r1", { status: "running", startedAt: 11 });
    s.updateRun("r1", { status: "ok", endedAt: 20, stopReason: "stop", result: { payloads: [{ text: "hi" }] } });
    expect(s.getRun("r1")).toMatchObject({
      status: "ok",
      startedAt: 11,
      endedAt: 20,
      stopReason: "stop",
      result: { payloads: [{ text: "hi" }] },
    });
    expect(s.getRun("missing")).toBeUndefined();
    expect(() => s.updateRun("r1", { bogus: 1 } as never)).toThrow(/unknown field bogus/);
  });

  it("a duplicate run id is refused (one idempotency key, one run)", () => {
    const s = store();
    s.createRun(run("r1", "queued", 10));
    expect(() => s.createRun(run("r1", "queued", 11))).toThrow();
  });

  it("lists runs in acceptance order, by status and by session", () => {
    const s = store();
    s.createRun(run("late", "queued", 30));
    s.createRun(run("early", "running", 10));
    s.createRun(run("other", "queued", 20, { sessionKey: "agent:main:other" }));
    s.createRun(run("done", "ok", 5));
    expect(s.listRuns({}).map((r) => r.runId)).toEqual(["done", "early", "other", "late"]);
    expect(s.listRuns({ statuses: ["queued", "running"] }).map((r) => r.runId)).toEqual(["early", "other", "late"]);
    expect(s.listRuns({ sessionKey: "agent:main:other" }).map((r) => r.runId)).toEqual(["other"]);
    expect(s.listRuns({ limit: 1 }).map((r) => r.runId)).toEqual(["done"]);
  });

  it("lists the newest runs first (ties: the later created first), of all sessions or of one", () => {
    const s = store();
    s.createRun(run("late", "queued", 30));
    s.createRun(run("early", "running", 10));
    s.createRun(run("other", "ok", 20, { sessionKey: "agent:main:other" }));
    s.createRun(run("tie", "ok", 30));
    expect(s.listRecentRuns({ limit: 10 }).map((r) => r.runId)).toEqual(["tie", "late", "other", "early"]);
    expect(s.listRecentRuns({ limit: 2 }).map((r) => r.runId)).toEqual(["tie", "late"]);
    expect(s.listRecentRuns({ limit: 10, sessionKey: "agent:main:other" }).map((r) => r.runId)).toEqual(["other"]);
    expect(s.listRecentRuns({ limit: 10, sessionKey: "agent:main:none" })).toEqual([]);
  });

  it("pruning drops old and surplus finished runs but never queued or running ones", () => {
    const s = store();
    const DAY = 86_400_000;
    const now = 100 * DAY;
    s.createRun(run("ancient-queued", "queued", 1));
    s.createRun(run("ancient-running", "running", 2));
    s.createRun(run("ancient-ok", "ok", 3, { endedAt: 4 }));
    s.createRun(run("ancient-error", "error", 5, { endedAt: 6 }));
    s.createRun(run("recent-1", "ok", now - 3 * DAY, { endedAt: now - 3 * DAY }));
    s.createRun(run("recent-2", "aborted", now - 2 * DAY, { endedAt: now - 2 * DAY }));
    s.createRun(run("recent-3", "timeout", now - DAY, { endedAt: now - DAY }));

    const removed = s.pruneRuns({ now, maxAgeMs: 7 * DAY, maxCount: 2 });
    expect(removed).toBe(3); // the two ancient finished runs by age, recent-1 by count
    expect(
      s
        .listRuns({})
        .map((r) => r.runId)
        .sort(),
    ).toEqual(["ancient-queued", "ancient-running", "recent-2", "recent-3"].sort());
  });
});

describe("run events", () => {
  const ev = (runId: string, seq: number, sessionKey = "agent:main:main") => ({
    runId,
    seq,
    ts: 1000 + seq,
    sessionKey,
    stream: "assistant",
    json: JSON.stringify({ runId, seq, stream: "assistant", ts: 1000 + seq, sessionKey, data: { delta: `d${seq}` } }),
  });
  const finished = (runId: string, sessionKey: string, at: number): RunRecord => ({
    runId,
    sessionKey,
    status: "ok",
    acceptedAt: at,
    endedAt: at,
    params: {},
  });

  it("stores events of several runs in one call and reads a run's back in seq order after a seq, up to a limit", () => {
    const s = store();
    // out of order and interleaved, as a batch of several concurrent runs comes
    s.appendRunEvents([ev("a", 2), ev("b", 1), ev("a", 1), ev("a", 3), ev("b", 2)]);
    expect(s.readRunEvents("a").map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(s.readRunEvents("a", { afterSeq: 1 }).map((e) => e.seq)).toEqual([2, 3]);
    expect(s.readRunEvents("a", { afterSeq: 0, limit: 2 }).map((e) => e.seq)).toEqual([1, 2]);
    expect(s.readRunEvents("b")).toEqual([ev("b", 1), ev("b", 2)]);
    expect(s.readRunEvents("nobody")).toEqual([]);
    expect(s.lastRunEventSeq("a")).toBe(3);
    expect(s.lastRunEventSeq("nobody")).toBe(0);
  });

  it("keeps a batch's statement journal in memory, so a run-event batch writes no temporary file", () => {
    // A multi-row INSERT keeps a statement journal, which SQLite spills to an (unlinked, so unseen) temporary file
    // past 64 KB unless temp_store is MEMORY: at 100 streams that was most of the gateway's write system calls
    // (bench/README.md, stream-cpu2). The setting is the only trace of it a test can read.
    const s = store();
    const db = (s as unknown as { db: Database.Database }).db;
    expect(db.pragma("temp_store", { simple: true })).toBe(2);
    const batch = Array.from({ length: 2048 }, (_, i) => ev(`run-${i % 100}`, Math.floor(i / 100) + 1));
    expect(s.appendRunEvents(batch)).toEqual({ ignored: 0 });
    expect(s.lastRunEventSeq("run-99")).toBe(20);
  });

  it("keeps the first write of a seq and says how many were already there", () => {
    const s = store();
    s.appendRunEvents([ev("a", 1)]);
    const again = { ...ev("a", 1), json: '{"changed":true}' };
    expect(s.appendRunEvents([again, ev("a", 2)])).toEqual({ ignored: 1 });
    expect(s.readRunEvents("a").map((e) => e.json)).toEqual([ev("a", 1).json, ev("a", 2).json]);
  });

  it("a run's events go when run pruning removes the run, and stay while it is kept", () => {
    const s = store();
    const DAY = 86_400_000;
    const now = 100 * DAY;
    s.createRun(finished("old", "agent:main:main", 1));
    s.createRun(finished("surplus", "agent:main:main", now - 3 * DAY));
    s.createRun(finished("kept", "agent:main:main", now - DAY));
    s.createRun({ ...finished("ancient-but-running", "agent:main:main", 2), status: "running" });
    s.appendRunEvents(["old", "surplus", "kept", "ancient-but-running"].flatMap((id) => [ev(id, 1), ev(id, 2)]));
    expect(s.pruneRuns({ now, maxAgeMs: 7 * DAY, maxCount: 1 })).toBe(2);
    expect(s.readRunEvents("old")).toEqual([]);
    expect(s.readRunEvents("surplus")).toEqual([]);
    expect(s.readRunEvents("kept").map((e) => e.seq)).toEqual([1, 2]);
    expect(s.readRunEvents("ancient-but-running").map((e) => e.seq)).toEqual([1, 2]);
  });

  it("deleting a session deletes the events of its runs, not those of other sessions", () => {
    const s = store();
    s.ensureSession("agent:main:gone", "main", 1);
    s.ensureSession("agent:main:stays", "main", 1);
    s.createRun(finished("g1", "agent:main:gone", 1));
    s.createRun(finished("s1", "agent:main:stays", 1));
    s.appendRunEvents([ev("g1", 1, "agent:main:gone"), ev("s1", 1, "agent:main:stays")]);
    expect(s.deleteSession("agent:main:gone")).toBe(true);
    expect(s.readRunEvents("g1")).toEqual([]);
    expect(s.readRunEvents("s1").map((e) => e.seq)).toEqual([1]);
  });

  it("a batch is one transaction: when one event cannot be written, none of the batch is", () => {
    const s = store();
    const broken = { ...ev("a", 2), json: null as unknown as string }; // NOT NULL refuses it
    expect(() => s.appendRunEvents([ev("a", 1), broken])).toThrow();
    expect(s.readRunEvents("a")).toEqual([]);
  });
});

describe("several processes on one file", () => {
  beforeAll(() => {
    if (!fs.existsSync(builtStore)) {
      throw new Error(`${builtStore} is missing: run \`npm run build\` before these tests`);
    }
  });

  /**
   * Runs `body` in a fresh node process with `store` opened on the test's file; returns what it printed. With a
   * `barrier` path the child loads everything, announces itself (`<barrier>.ready-<pid>`) and opens the store only
   * once `<barrier>.go` exists, so several children can be made to open the file at the same moment.
   */
  async function inChild(body: string, barrier?: string): Promise<string> {
    const wait = barrier
      ? `
        const barrier = ${JSON.stringify(barrier)};
        fs.writeFileSync(barrier + ".ready-" + process.pid, "");
        const since = Date.now();
        const nap = new Int32Array(new SharedArrayBuffer(4));
        while (!fs.existsSync(barrier + ".go")) {
          if (Date.now() - since > 10000) throw new Error("the barrier never opened");
          Atomics.wait(nap, 0, 0, 1);
        }`
      : "";
    const script = `
      import fs from "node:fs";
      import { SqliteStore } from ${JSON.stringify(pathToFileURL(builtStore).href)};
      ${wait}
      const store = new SqliteStore(${JSON.stringify(file)});
      try { ${body} } finally { store.close(); }
    `;
    const { stdout } = await execFileAsync(process.execPath, ["--input-type=module", "-e", script], {
      timeout: 15_000,
    });
    return stdout;
  }

  /** Opens the barrier once `count` children wait at it. */
  async function release(barrier: string, count: number): Promise<void> {
    const name = path.basename(barrier);
    for (let i = 0; i < 3000; i++) {
      const ready = fs.readdirSync(path.dirname(barrier)).filter((f) => f.startsWith(`${name}.ready-`));
      if (ready.length === count) {
        fs.writeFileSync(`${barrier}.go`, "");
        return;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error(`only some of ${count} children reached the barrier`);
  }

  it("several processes opening a brand-new state dir at once all succeed (migrations run exactly once)", async () => {
    // regression: each process read user_version 0 before any had migrated, and all but one then failed with
    // "table sessions already exists" (seen as two CLI commands started together on a fresh install)
    const barrier = path.join(dir, "start");
    const children = Promise.allSettled(
      Array.from({ length: 3 }, (_, i) => inChild(`store.ensureSession("agent:main:p${i}", "main", ${i});`, barrier)),
    );
    await release(barrier, 3);
    const results = await children;
    const failures = results.flatMap((r) => (r.status === "rejected" ? [String((r.reason as Error).message)] : []));
    expect(failures).toEqual([]);
    const s = store();
    expect(s.listSessions()).toHaveLength(3);
  });

  it("processes appending at the same moment all succeed, and every session's numbering stays gap-free", async () => {
    // regression: a deferred transaction reads max(seq) and then writes; when another process committed in between,
    // SQLite refuses the write at once ("database is locked") instead of waiting for busy_timeout
    const s = store();
    for (let i = 0; i < 3; i++) s.ensureSession(`agent:main:w${i}`, "main", i);
    s.ensureSession("agent:main:shared", "main", 9);
    const barrier = path.join(dir, "append");
    const children = Promise.allSettled(
      Array.from({ length: 3 }, (_, i) =>
        inChild(
          `for (let n = 0; n < 40; n++) {
             const message = { role: "user", content: "w${i} #" + n };
             store.appendTranscript([
               { sessionKey: "agent:main:w${i}", kind: "message", createdAt: n, message },
               { sessionKey: "agent:main:shared", kind: "message", createdAt: n, message },
             ]);
           }`,
          barrier,
        ),
      ),
    );
    await release(barrier, 3);
    const failures = (await children).flatMap((r) =>
      r.status === "rejected" ? [String((r.reason as Error).message)] : [],
    );
    expect(failures).toEqual([]);
    for (let i = 0; i < 3; i++) {
      expect(s.readTranscript(`agent:main:w${i}`).map((r) => r.seq)).toEqual(
        Array.from({ length: 40 }, (_, n) => n + 1),
      );
    }
    expect(s.readTranscript("agent:main:shared").map((r) => r.seq)).toEqual(
      Array.from({ length: 120 }, (_, n) => n + 1),
    );
  });

  it("another process reads the rows this one wrote, while this one still has the file open", async () => {
    const s = store();
    s.ensureSession("agent:main:main", "main", 1);
    s.appendTranscript([
      row("agent:main:main", user("hello from the parent")),
      row("agent:main:main", said("hi parent")),
    ]);

    const out = await inChild(`
      const rows = store.readTranscript("agent:main:main");
      console.log(JSON.stringify(rows.map((r) => [r.seq, r.message.role, r.message.content])));
    `);
    expect(JSON.parse(out)).toEqual([
      [1, "user", "hello from the parent"],
      [2, "assistant", [{ type: "text", text: "hi parent" }]],
    ]);
  });

  it("rows another process appends are visible to stores already open here, and numbering continues", async () => {
    const a = store();
    const b = store();
    a.ensureSession("agent:main:main", "main", 1);
    a.appendTranscript([row("agent:main:main", user("first, from here"))]);
    expect(b.readTranscript("agent:main:main")).toHaveLength(1); // a second handle in this process sees it

    await inChild(`
      store.appendTranscript([
        { sessionKey: "agent:main:main", kind: "message", runId: "child", createdAt: 2, message: { role: "user", content: "second, from the child" } },
      ]);
      store.createRun({ runId: "child-run", sessionKey: "agent:main:main", status: "ok", acceptedAt: 2, params: {} });
    `);

    for (const s of [a, b]) {
      const rows = s.readTranscript("agent:main:main");
      expect(contents(rows)).toEqual(["first, from here", "second, from the child"]);
      expect(rows.map((r) => r.seq)).toEqual([1, 2]);
      expect(s.getRun("child-run")?.status).toBe("ok");
    }
    b.appendTranscript([row("agent:main:main", said("third, from here"))]);
    expect(a.readTranscript("agent:main:main").map((r) => r.seq)).toEqual([1, 2, 3]);
  });
});
