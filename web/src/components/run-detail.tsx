/**
 * A run's details (agent.wait with no wait, and its retries/fallbacks from agent.events), shown in place: under its
 * row on the Runs page, under its answer in a session.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import type { AgentEventsResult } from "../../../src/protocol/payloads";
import type { WaitResult } from "../../../src/protocol/run";
import { shortActor, time } from "../format";
import type { ConsoleModel } from "../model";

interface Attempts {
  retries: number;
  fallbacks: string[];
}

/** A run's retries and fallbacks, from its stored lifecycle events (agent.events pages; a long run: the first 20). */
async function readAttempts(model: ConsoleModel, runId: string): Promise<Attempts | undefined> {
  const found: Attempts = { retries: 0, fallbacks: [] };
  try {
    let params: Record<string, unknown> = { runId, afterSeq: 0, limit: 1000 };
    for (let page = 0; page < 20; page++) {
      const res = await model.gw.call<AgentEventsResult>("agent.events", params);
      for (const e of res.events) {
        if (e.stream !== "lifecycle") continue;
        if (e.data.phase === "retry") found.retries++;
        if (e.data.phase === "fallback") found.fallbacks.push(`${e.data.from} → ${e.data.to}`);
      }
      if (!res.nextCursor) break;
      params = { runId, cursor: res.nextCursor };
    }
    return found;
  } catch {
    // pruned, or not visible to this token: the detail shows what agent.wait says
    return undefined;
  }
}

export function RunDetail(props: { model: ConsoleModel; runId: string; actor?: string; onClose(): void }) {
  const { model, runId } = props;
  const [detail, setDetail] = useState<WaitResult | undefined>();
  const [attempts, setAttempts] = useState<Attempts | undefined>();
  const open = model.gw.state.kind === "open";
  useEffect(() => {
    if (!open) return;
    setDetail(undefined);
    setAttempts(undefined);
    model.gw
      .call<WaitResult>("agent.wait", { runId, timeoutMs: 0 })
      .then(setDetail)
      .catch((err: Error) => setDetail({ runId, status: "error", error: err.message }));
    if (model.has("agent.events")) void readAttempts(model, runId).then(setAttempts);
  }, [runId, open]);
  const actor = shortActor(props.actor);
  // opened under a row that may be near the bottom of the screen: brought into view, or the click seems to do nothing
  const ref = useRef<HTMLElement>(null);
  useEffect(() => ref.current?.scrollIntoView({ block: "nearest" }), [runId]);
  return (
    <section ref={ref} class="detail" aria-label={`Details of run ${runId}`} data-testid="run-detail">
      <h2>Run {runId}</h2>
      {detail ? (
        <dl>
          <dt>Status</dt>
          <dd>{detail.status}</dd>
          <dt>Started</dt>
          <dd>{time(detail.startedAt)}</dd>
          <dt>Ended</dt>
          <dd>{time(detail.endedAt)}</dd>
          <dt>Model</dt>
          <dd>{detail.model ?? "—"}</dd>
          {attempts && (
            <>
              <dt>Retries</dt>
              <dd data-testid="retries">{attempts.retries}</dd>
              <dt>Fallback</dt>
              <dd>{attempts.fallbacks.join(", ") || "—"}</dd>
            </>
          )}
          <dt>Stop reason</dt>
          <dd>{detail.stopReason ?? "—"}</dd>
          {detail.error && (
            <>
              <dt>Error</dt>
              <dd>{detail.error}</dd>
            </>
          )}
          {props.actor && (
            <>
              <dt>Started by</dt>
              <dd title={actor.full} data-testid="actor">
                {actor.text}
              </dd>
            </>
          )}
        </dl>
      ) : (
        <p>Loading…</p>
      )}
      <button type="button" onClick={props.onClose}>
        Close
      </button>
    </section>
  );
}
