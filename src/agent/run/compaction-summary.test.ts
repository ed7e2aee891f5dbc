/*
 * The compaction summary's round trip through a real SQLite file: what compactContext returns is what the next
 * run loads.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../storage/sqlite-store.js";
import { compactContext } from "./compaction.js";
import { messagesFromContextRows, summaryMessage, summaryText } from "./compaction-summary.js";
import { compactionReserve } from "./context-budget-check.js";
import { conversation, fakeSummarizer, user } from "./test-helpers.js";

let dir: string;
let store: SqliteStore;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-compaction-"));
  store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
});

afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("summary messages", () => {
  it("a summary message is recognized as one, a user message that merely mentions a summary is not", () => {
    expect(summaryText(summaryMessage("we fixed a.ts"))).toBe("we fixed a.ts");
    expect(summaryText(user("summary of the earlier conversation please"))).toBeUndefined();
    expect(summaryText(undefined)).toBeUndefined();
  });
});

describe("history after a compaction", () => {
  it("the next run loads exactly the compacted context: the summary, then the kept messages", async () => {
    store.ensureSession("k", "main", 1);
    const rows = store.appendTranscript(
      conversation(30, 100).map((message) => ({ sessionKey: "k", kind: "message" as const, createdAt: 1, message })),
    );
    const messages = messagesFromContextRows(store.readContextRows("k"));
    const r = await compactContext({
      messages,
      window: 8_000,
      reserve: compactionReserve(8_000),
      summarize: fakeSummarizer(() => "30 questions about numbers").summarize,
      attemptsSoFar: 0,
      reason: "threshold",
      signal: new AbortController().signal,
    });
    if (r.outcome !== "compacted") throw new Error(`expected a compaction, got ${r.outcome}`);

    store.appendCompaction("k", { summary: r.summary, firstKeptSeq: rows[r.firstKeptIndex].seq, createdAt: 2 });
    expect(messagesFromContextRows(store.readContextRows("k"))).toEqual(r.messages);
    expect(store.getSession("k")?.compactionCount).toBe(1);

    store.appendTranscript([{ sessionKey: "k", kind: "message", createdAt: 3, message: user("next question") }]);
    const loaded = messagesFromContextRows(store.readContextRows("k"));
    expect(loaded[0]).toEqual(summaryMessage("30 questions about numbers"));
    expect(loaded.at(-1)).toEqual(user("next question"));
    expect(loaded).toHaveLength(r.messages.length + 1);
  });
});
