import { useState } from "preact/hooks";
import { sessionHref, shortKey, time } from "../format";
import { type ConsoleModel, useModel } from "../model";

/** Stuck-session diagnostics (diagnostics.list + the `diagnostic` event), read-only, filtered by kind. */
export function DiagnosticsPage(props: { model: ConsoleModel }) {
  const { model } = props;
  useModel(model);
  const [kind, setKind] = useState("");
  const kinds = [...new Set(model.diagnostics.map((d) => String(d.kind ?? d.type ?? "")))].filter(Boolean).sort();
  const rows = model.diagnostics.filter((d) => !kind || String(d.kind ?? d.type) === kind);
  return (
    <section aria-labelledby="diag-h">
      <h1 id="diag-h">Diagnostics</h1>
      <div class="filters">
        <label>
          Kind
          <select value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value)}>
            <option value="">any</option>
            {kinds.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
      </div>
      <table class="list" data-testid="diagnostics">
        <caption class="sr-only">Diagnostics, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Kind</th>
            <th scope="col">Session</th>
            <th scope="col" class="wide">
              Details
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((d, i) => {
            const { kind: k, type: _t, ts, sessionKey, ...rest } = d;
            return (
              <tr key={`${ts}-${i}`}>
                <td data-label="Time">{time(Number(ts))}</td>
                <td data-label="Kind">{String(k ?? d.type)}</td>
                <td data-label="Session">
                  {sessionKey ? <a href={sessionHref(sessionKey)}>{shortKey(sessionKey)}</a> : "—"}
                </td>
                <td data-label="Details" class="wide">
                  <code>{JSON.stringify(rest)}</code>
                </td>
              </tr>
            );
          })}
          {rows.length === 0 && (
            <tr>
              <td colSpan={4} class="empty">
                No diagnostics: no session has been stuck.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}
