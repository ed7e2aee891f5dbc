/** What the audit tests share: in-memory stores closed after each test, and audit rows with distinct ids and times. */
import { afterEach } from "vitest";
import type { AuditAction } from "../protocol/payloads.js";
import { SqliteStore } from "./sqlite-store.js";
import type { AuditEventInput } from "./types.js";

const stores: SqliteStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

/** An in-memory store, closed after the test. */
export function auditTestStore(): SqliteStore {
  const s = new SqliteStore(":memory:");
  stores.push(s);
  return s;
}

let n = 0;
/** A started-run row of agent:main:main / r1, the nth one made occurring at n seconds; `over` changes any field. */
export function auditRow(over: Partial<AuditEventInput> = {}): AuditEventInput {
  n++;
  return {
    eventId: `e${n}`,
    sourceSequence: 1,
    occurredAt: 1000 * n,
    actor: "cli",
    action: "agent.run.started" as AuditAction,
    status: "started",
    sessionKey: "agent:main:main",
    runId: "r1",
    schemaVersion: 1,
    redaction: "metadata_only",
    ...over,
  };
}
