import { Fragment } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { RunInfo, RunsListResult } from "../../../src/protocol/payloads";
import { RunDetail } from "../components/run-detail";
import { duration, sessionHref, shortKey, tokens, usd } from "../format";
import { type ConsoleModel, useModel } from "../model";

/** Recent runs (runs.list) with what this console saw live of each: retries and fallbacks; details open under the row. */
export function RunsPage(props: { model: ConsoleModel }) {
  const { model } = props;
  useModel(model);
  const [runs, setRuns] = useState<RunInfo[]>([]);
  const [error, setError] = useState<string | undefined>();
  const [selected, setSelected] = useState<string | undefined>();
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
              <Fragment key={r.runId}>
                <tr aria-selected={selected === r.runId}>
                  <td data-label="Run">
                    <button
                      type="button"
                      class="link"
                      onClick={() => setSelected(selected === r.runId ? undefined : r.runId)}
                      aria-expanded={selected === r.runId}
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
                {selected === r.runId && (
                  <tr class="detail-row">
                    <td colSpan={8}>
                      <RunDetail model={model} runId={r.runId} actor={r.actor} onClose={() => setSelected(undefined)} />
                    </td>
                  </tr>
                )}
              </Fragment>
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
    </section>
  );
}
