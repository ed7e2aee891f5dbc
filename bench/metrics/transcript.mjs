// Transcript append throughput: `rows` rows appended to one session, one appendTranscript call per row (what the
// runner does: one call per message), then the same rows in batches, then a split of where the time goes, measured
// piece by piece on the same database: the raw INSERT, the transaction around it, the two lookups appendTranscript
// makes before inserting (generation, max(seq)), and serializing the message. Options: { rows }.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { openStore } from "../../dist/storage/sqlite-store.js";
import { childOptions, emitResult } from "../lib/child.mjs";
import { nowMs } from "../lib/stats.mjs";

const opts = childOptions();
const rows = opts.rows ?? 10_000;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-bench-transcript-"));
const store = openStore(dir);
const now = Date.now();
store.ensureSession("bench", "main", now);
store.ensureSession("batched", "main", now);

// A realistic mix: user text, an assistant tool call, its result, the answer.
const messages = [
  { role: "user", content: "Please read the file and summarize it for me." },
  {
    role: "assistant",
    content: [{ type: "toolCall", id: "call_1", name: "read", arguments: { path: "notes/today.md" } }],
    usage: { input: 1200, output: 20, cacheRead: 0, cacheWrite: 0, total: 1220 },
    stopReason: "tool_calls",
  },
  {
    role: "toolResult",
    toolCallId: "call_1",
    toolName: "read",
    content: "line one\nline two\nline three\n",
    isError: false,
  },
  {
    role: "assistant",
    content: [{ type: "text", text: "The file lists three lines; nothing else." }],
    usage: { input: 1300, output: 12, cacheRead: 0, cacheWrite: 0, total: 1312 },
    stopReason: "stop",
  },
];
const row = (key, i) => ({
  sessionKey: key,
  kind: "message",
  runId: `run-${i >> 2}`,
  createdAt: now + i,
  message: messages[i % 4],
});

function rate(count, fn) {
  const t0 = nowMs();
  fn();
  const ms = nowMs() - t0;
  return { rowsPerSecond: count / (ms / 1000), usPerRow: (ms * 1000) / count };
}

const single = rate(rows, () => {
  for (let i = 0; i < rows; i++) store.appendTranscript([row("bench", i)]);
});
const batch = 100;
const batched = rate(rows, () => {
  for (let i = 0; i < rows; i += batch) {
    store.appendTranscript(Array.from({ length: Math.min(batch, rows - i) }, (_, j) => row("batched", i + j)));
  }
});
const readAll = rate(rows, () => store.readTranscript("bench", { kinds: ["message"] }));
store.close();

// The pieces, on the same file through a second connection with the same pragmas.
const db = new Database(path.join(dir, "loopgate.sqlite"));
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL");
db.prepare(
  "INSERT INTO sessions (key, session_id, agent_id, generation, created_at, updated_at) VALUES ('raw', 'raw-id', 'main', 1, 0, 0)",
).run();
const insert = db.prepare(
  "INSERT INTO transcript (session_key, generation, seq, kind, run_id, created_at, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
);
const generation = db.prepare("SELECT generation FROM sessions WHERE key = ?");
const maxSeq = db.prepare("SELECT max(seq) AS m FROM transcript WHERE session_key = ? AND generation = ?");
const data = messages.map((m) => JSON.stringify({ message: m }));
let seq = 0;
const insertTx = db.transaction((i) => insert.run("raw", 1, ++seq, "message", `run-${i >> 2}`, now + i, data[i % 4]));
const pieces = {
  insertInOwnTransaction: rate(rows, () => {
    for (let i = 0; i < rows; i++) insertTx(i);
  }),
  insertAutocommit: rate(rows, () => {
    for (let i = 0; i < rows; i++) insert.run("raw", 1, ++seq, "message", `run-${i >> 2}`, now + i, data[i % 4]);
  }),
  insertOneTransaction: rate(rows, () => {
    db.transaction(() => {
      for (let i = 0; i < rows; i++) insert.run("raw", 1, ++seq, "message", `run-${i >> 2}`, now + i, data[i % 4]);
    })();
  }),
  lookups: rate(rows, () => {
    for (let i = 0; i < rows; i++) {
      const g = generation.get("bench").generation;
      maxSeq.get("bench", g);
    }
  }),
  emptyTransaction: rate(rows, () => {
    const tx = db.transaction(() => {});
    for (let i = 0; i < rows; i++) tx();
  }),
  // what SqliteStore.transaction does: db.transaction(fn) builds a new wrapper on every call
  emptyTransactionBuiltPerCall: rate(rows, () => {
    for (let i = 0; i < rows; i++) db.transaction(() => {})();
  }),
  serialize: rate(rows, () => {
    for (let i = 0; i < rows; i++) JSON.stringify({ message: messages[i % 4] });
  }),
};
db.close();
fs.rmSync(dir, { recursive: true, force: true });
emitResult({ rows, single, batched, batch, readAll, pieces });
