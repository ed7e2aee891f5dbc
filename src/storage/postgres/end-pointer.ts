import type { RunEndNotice } from "../types.js";

/**
 * A run's end as the other nodes hear it (`k: "end"`), one definition for the two ways it goes out: riding a run-event
 * batch's commit (PostgresStore.appendRunEvents) or in a NOTIFY of its own (events/pg-bus.ts). A module of its own
 * with no driver behind it, so the bus can import it without loading pg. An unknown session is left out, not null.
 */
export function runEndPointer(end: RunEndNotice): { k: "end"; runId: string; seq: number; sessionKey?: string } {
  return end.sessionKey === undefined
    ? { k: "end", runId: end.runId, seq: end.seq }
    : { k: "end", runId: end.runId, seq: end.seq, sessionKey: end.sessionKey };
}
