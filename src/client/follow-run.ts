/**
 * Attach to a run and follow it to its end, from any seq: the stored events after `afterSeq` (agent.events, paged),
 * then the live ones, each delivered once and in seq order. After a disconnect, call it again on a new connection
 * with `afterSeq` = the `lastSeq` of the previous follow: the union is every event of the run exactly once.
 *
 * Live events that arrive while the replay is still being paged are held and delivered after it; events the
 * connection already had (a connection with operator.read receives every run's events) are skipped by seq.
 */
import type { AgentEventPayload, AgentEventsResult } from "../protocol/payloads.js";
import type { GatewayClient } from "./gateway-client.js";

export interface FollowRunOptions {
  /** the last seq the caller has (default 0: from the start) */
  afterSeq?: number;
  /** every event after `afterSeq`, once, in seq order */
  onEvent: (event: AgentEventPayload) => void;
  /** events per replay page (the gateway's default when absent) */
  limit?: number;
}

export interface RunFollow {
  /** the highest seq delivered so far: where a re-attach continues */
  readonly lastSeq: number;
  /** the run's end (its terminal event was delivered); rejects when the connection closes first */
  readonly done: Promise<{ status: AgentEventsResult["status"] }>;
  /** stop following (the connection stays open) */
  stop(): void;
}

const isTerminal = (ev: AgentEventPayload) =>
  ev.stream === "lifecycle" && (ev.data.phase === "end" || ev.data.phase === "error");

export async function followRun(client: GatewayClient, runId: string, opts: FollowRunOptions): Promise<RunFollow> {
  let last = opts.afterSeq ?? 0;
  let replaying = true;
  let held: AgentEventPayload[] = [];
  let settle!: { resolve: (v: { status: AgentEventsResult["status"] }) => void; reject: (err: Error) => void };
  const done = new Promise<{ status: AgentEventsResult["status"] }>((resolve, reject) => {
    settle = { resolve, reject };
  });
  // a caller that only reads lastSeq must not get an unhandled rejection when the connection drops
  done.catch(() => {});
  let stopped = false;
  const stop = () => {
    stopped = true;
    offEvent();
    offClose();
  };
  const deliver = (ev: AgentEventPayload) => {
    if (stopped || ev.seq <= last) return;
    last = ev.seq;
    opts.onEvent(ev);
    if (isTerminal(ev)) {
      stop();
      settle.resolve({ status: (ev.data as { status: AgentEventsResult["status"] }).status });
    }
  };
  const offEvent = client.on("agent", (payload) => {
    const ev = payload as AgentEventPayload;
    if (ev?.runId !== runId) return;
    if (replaying) held.push(ev);
    else deliver(ev);
  });
  const offClose = client.onClose(({ code, reason }) => {
    stop();
    settle.reject(new Error(`the gateway connection closed (${code}${reason ? ` ${reason}` : ""}) at seq ${last}`));
  });

  try {
    let params: Record<string, unknown> = { runId, afterSeq: last, ...(opts.limit ? { limit: opts.limit } : {}) };
    let page: AgentEventsResult;
    for (;;) {
      page = await client.request<AgentEventsResult>("agent.events", params);
      for (const ev of page.events) deliver(ev);
      if (!page.nextCursor) break;
      params = { runId, cursor: page.nextCursor, ...(opts.limit ? { limit: opts.limit } : {}) };
    }
    replaying = false;
    const live = held.sort((a, b) => a.seq - b.seq);
    held = [];
    for (const ev of live) deliver(ev);
    if (page.done && !stopped) {
      stop();
      settle.resolve({ status: page.status });
    }
  } catch (err) {
    stop();
    throw err;
  }
  return {
    get lastSeq() {
      return last;
    },
    done,
    stop,
  };
}
