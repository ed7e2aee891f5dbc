import { describe, expect, it } from "vitest";
import { auditRow as row, auditTestStore as store } from "./audit-rows.test-support.js";
import type { SqliteStore } from "./sqlite-store.js";

describe("audit rows in the store", () => {
  it("are numbered in append order and listed newest first, each filter narrowing the list", () => {
    const s = store();
    s.appendAuditEvents([
      row({ occurredAt: 10, runId: "r1" }),
      row({ occurredAt: 20, runId: "r1", action: "tool.action.started", toolName: "read", toolCallFingerprint: "ab" }),
      row({ occurredAt: 30, runId: "r2", actor: "cron:nightly", sessionKey: "cron:nightly" }),
      row({
        occurredAt: 40,
        runId: "r2",
        actor: "cron:nightly",
        sessionKey: "cron:nightly",
        status: "failed",
        code: "timeout",
        action: "agent.run.finished",
      }),
    ]);
    const all = s.listAuditEvents({ limit: 10 });
    expect(all.map((r) => r.sequence)).toEqual([4, 3, 2, 1]);
    expect(all[2]).toMatchObject({
      kind: "tool_action",
      toolName: "read",
      toolCallFingerprint: "ab",
      redaction: "metadata_only",
    });
    expect(all[0]).toMatchObject({ status: "failed", code: "timeout" });
    expect(all[3]).not.toHaveProperty("code");
    const seqs = (q: Parameters<SqliteStore["listAuditEvents"]>[0]) => s.listAuditEvents(q).map((r) => r.sequence);
    expect(seqs({ limit: 10, sessionKey: "cron:nightly" })).toEqual([4, 3]);
    expect(seqs({ limit: 10, runId: "r1" })).toEqual([2, 1]);
    expect(seqs({ limit: 10, actor: "cli" })).toEqual([2, 1]);
    expect(seqs({ limit: 10, action: "agent.run.started" })).toEqual([3, 1]);
    expect(seqs({ limit: 10, status: "failed" })).toEqual([4]);
    expect(seqs({ limit: 10, after: 20, before: 40 })).toEqual([3, 2]);
    expect(seqs({ limit: 10, beforeSequence: 3 })).toEqual([2, 1]);
    expect(seqs({ limit: 1 })).toEqual([4]);
  });

  it("pruning drops rows past the age, then the oldest past the row cap, and never reuses a sequence", () => {
    const s = store();
    s.appendAuditEvents([1, 2, 3, 4, 5, 6].map((i) => row({ occurredAt: i * 100 })));
    // older than 250: rows at 100 and 200 go; then only the newest 3 of the remaining 4 stay
    expect(s.pruneAuditEvents({ now: 1250, maxAgeMs: 1000, maxRows: 3 })).toBe(3);
    expect(s.listAuditEvents({ limit: 10 }).map((r) => r.sequence)).toEqual([6, 5, 4]);
    expect(s.pruneAuditEvents({ now: 1250, maxAgeMs: 1000, maxRows: 3 })).toBe(0);
    s.pruneAuditEvents({ now: 10_000, maxAgeMs: 1, maxRows: 3 });
    expect(s.listAuditEvents({ limit: 10 })).toEqual([]);
    s.appendAuditEvents([row()]);
    expect(s.listAuditEvents({ limit: 10 }).map((r) => r.sequence)).toEqual([7]);
  });
});
