/**
 * One page of `agent.events`: a run's events after a seq, up to the seq the replay ends at, at most `limit` of them
 * and no more than the page's byte budget. Read through the event store writer (events/run-event-writer.ts), so
 * events not written to the store yet are included; read in small batches, so replaying a long run costs one page
 * of memory. The events are sent as they were stored (their wire JSON), each counted by its own bytes.
 */
import type { RunEventWriter } from "../events/run-event-writer.js";
import { ErrorCodes } from "../protocol/frames.js";
import type { AgentEventPayload, AgentEventsResult } from "../protocol/payloads.js";
import type { RunRecord, StoredRunEvent } from "../storage/types.js";
import { GatewayError } from "./errors.js";
import { CURSOR_ROOM_BYTES, decodeCursor, encodeCursor, PageBudget } from "./paging.js";

const KIND = "agent.events";
/** events read at a time */
const READ_BATCH = 64;
export const DEFAULT_EVENTS_LIMIT = 500;

/** r: run, a: the last seq sent, u: the seq the replay ends at (where the live events took over) */
type EventsCursor = { r: string; a: number; u: number };

/** Where a replay page starts and ends. */
export interface ReplayRange {
  after: number;
  until: number;
}

/**
 * The range a request asks for. Without a cursor the replay ends at the run's newest event right now (the caller
 * holds the live events back from before this read until it lets them through); a cursor keeps the first page's end.
 */
export async function replayRange(
  writer: RunEventWriter,
  runId: string,
  params: { afterSeq?: number; cursor?: string },
): Promise<ReplayRange & { continued: boolean }> {
  if (params.cursor === undefined) {
    return { after: params.afterSeq ?? 0, until: await writer.lastSeq(runId), continued: false };
  }
  if (params.afterSeq !== undefined) {
    throw new GatewayError({
      code: ErrorCodes.invalidParams,
      message: "params.cursor: pass cursor or afterSeq, not both (the cursor already says where the page starts)",
    });
  }
  const c = decodeCursor<EventsCursor>(KIND, params.cursor, { r: "string", a: "number", u: "number" });
  if (c.r !== runId) {
    throw new GatewayError({
      code: ErrorCodes.invalidParams,
      message: `params.cursor: made for another run than "${runId}"; pass the nextCursor of this run's previous page`,
    });
  }
  return { after: c.a, until: c.u, continued: true };
}

const TERMINAL = new Set(["ok", "error", "timeout", "aborted"]);

/**
 * Whether the run has ended, and its status. The terminal lifecycle event is emitted before the run record is
 * updated, so a run whose newest event is terminal has ended even if its record does not say so yet.
 */
export async function runState(
  writer: RunEventWriter,
  run: RunRecord,
  lastSeq: number,
): Promise<{ done: boolean; status: AgentEventsResult["status"] }> {
  if (TERMINAL.has(run.status)) return { done: true, status: run.status };
  const [last] = lastSeq > 0 ? await writer.read(run.runId, { afterSeq: lastSeq - 1, limit: 1 }) : [];
  if (last?.stream === "lifecycle") {
    const data = (JSON.parse(last.json) as AgentEventPayload).data as { phase?: string; status?: string };
    if ((data.phase === "end" || data.phase === "error") && data.status !== undefined && TERMINAL.has(data.status)) {
      return { done: true, status: data.status as AgentEventsResult["status"] };
    }
  }
  return { done: false, status: run.status };
}

export async function readRunEventsPage(
  writer: RunEventWriter,
  run: RunRecord,
  range: ReplayRange,
  opts: { limit: number; maxBytes: number; state: { done: boolean; status: AgentEventsResult["status"] } },
): Promise<AgentEventsResult> {
  const head = {
    runId: run.runId,
    sessionKey: run.sessionKey,
    status: opts.state.status,
    done: opts.state.done,
    events: [],
    lastSeq: range.until,
  };
  const budget = new PageBudget(opts.maxBytes, Buffer.byteLength(JSON.stringify(head)) + CURSOR_ROOM_BYTES);
  const picked: StoredRunEvent[] = [];
  let point = range.after;
  let more = false;
  read: while (picked.length < opts.limit && point < range.until) {
    const want = Math.min(opts.limit - picked.length, READ_BATCH);
    const rows = await writer.read(run.runId, { afterSeq: point, limit: want });
    for (const row of rows) {
      if (row.seq > range.until) break read;
      if (!budget.take(row.json)) {
        more = true;
        break read;
      }
      picked.push(row);
      point = row.seq;
    }
    if (rows.length < want) break;
  }
  if (picked.length === opts.limit && point < range.until) more = true;
  const page: AgentEventsResult = { ...head, events: picked.map((e) => JSON.parse(e.json) as AgentEventPayload) };
  if (more) page.nextCursor = encodeCursor(KIND, { r: run.runId, a: point, u: range.until });
  return page;
}
