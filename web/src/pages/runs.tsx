import { useEffect, useState } from "preact/hooks";
import type { AgentEventsResult, RunInfo, RunsListResult } from "../../../src/protocol/payloads";
import type { WaitResult } from "../../../src/protocol/run";
import { duration, sessionHref, shortKey, time, tokens, usd } from "../format";
import { type ConsoleModel, useModel } from "../model";

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

/** Recent runs (runs.list) with what this console saw live of each: retries and fallbacks. */
export function RunsPage(props: { model: ConsoleModel }) {
  const { model } = props;
  useModel(model);
  const [runs, setRuns] = useState<RunInfo[]>([]);
  const [error, setError] = useState<string | undefined>();
  const [selected, setSelected] = useState<string | undefined>();
  const [detail, setDetail] = useState<WaitResult | undefined>();
  const open = model.gw.state.kind === "open";
  // re-read when a run starts or ends (the live runs' states change the model's version)
  const liveKey = [...model.runs.values()].map((r) => `${r.runId}:${r.state}`).join(",");
  useEffect(() => {
    if (!open) return;
    model.gw
      .call<RunsListResult>("runs.list", { limit: 100 })
      .then((r) => {
        setRuns(r.runs);
        setError(undefined);
      })
      .catch((err: Error) => setError(err.message));
  }, [open, liveKey]);
  const [attempts, setAttempts] = useState<Attempts | undefined>();
  useEffect(() => {
    if (!selected || !open) return;
    setDetail(undefined);
    setAttempts(undefined);
    model.gw
      .call<WaitResult>("agent.wait", { runId: selected, timeoutMs: 0 })
      .then(setDetail)
      .catch((err: Error) => setDetail({ runId: selected, status: "error", error: err.message }));
    if (model.has("agent.events")) void readAttempts(model, selected).then(setAttempts);
  }, [selected, open]);
  return (
    <section aria-labelledby="runs-h">
      <h1 id="runs-h">Runs</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <table class="list" data-testid="runs">
        <caption class="sr-only">Recent runs, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Run</th>
            <th scope="col">Session</th>
            <th scope="col">Status</th>
            <th scope="col" class="num">
              Duration
            </th>
            <th scope="col" class="num">
              Tokens
            </th>
            <th scope="col" class="num">
              Cost
            </th>
            <th scope="col" class="wide">
              Model
            </th>
            <th scope="col" class="wide">
              Retries / fallback
            </th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => {
            const live = model.runs.get(r.runId);
            const status = live && (live.state === "running" || live.state === "queued") ? live.state : r.status;
            return (
              <tr key={r.runId} aria-selected={selected === r.runId}>
                <td data-label="Run">
                  <button
                    type="button"
                    class="link"
                    onClick={() => setSelected(r.runId)}
                    aria-label={`Details of run ${r.runId}`}
                  >
                    {r.runId.slice(0, 12)}
                  </button>
                </td>
                <td data-label="Session">
                  <a href={sessionHref(r.sessionKey)}>{shortKey(r.sessionKey)}</a>
                </td>
                <td data-label="Status">
                  <span class={`status ${status}`}>{status}</span>
                </td>
                <td data-label="Duration" class="num">
                  {duration(r.durationMs)}
                </td>
                <td data-label="Tokens" class="num">
                  {tokens(r.usage?.total)}
                </td>
                <td data-label="Cost" class="num">
                  {usd(r.costUsd)}
                </td>
                <td data-label="Model" class="wide">
                  {r.model ?? live?.model ?? "—"}
                </td>
                <td data-label="Retries / fallback" class="wide">
                  {live ? `${live.retries} / ${live.fallbacks.join(", ") || "—"}` : "—"}
                </td>
              </tr>
            );
          })}
          {runs.length === 0 && (
            <tr>
              <td colSpan={8} class="empty">
                No runs yet.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {selected && (
        <aside class="detail" aria-label="Run details" data-testid="run-detail">
          <h2>Run {selected}</h2>
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
              {runs.find((r) => r.runId === selected)?.actor && (
                <>
                  <dt>Started by</dt>
                  <dd>{runs.find((r) => r.runId === selected)?.actor}</dd>
                </>
              )}
            </dl>
          ) : (
            <p>Loading…</p>
          )}
          <button type="button" onClick={() => setSelected(undefined)}>
            Close
          </button>
        </aside>
      )}
    </section>
  );
}
