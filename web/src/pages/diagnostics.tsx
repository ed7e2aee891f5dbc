import { useState } from "preact/hooks";
import { duration, sessionHref, shortKey, time } from "../format";
import { type ConsoleModel, type Diagnostic, useModel } from "../model";

const TYPES = ["session.long_running", "session.stalled", "session.stuck", "session.recovery"];

function what(d: Diagnostic): string {
  if (d.type === "session.recovery") {
    return `${d.phase} ${d.action ?? ""}${d.outcome ? ` → ${d.outcome}` : ""} (cause ${d.cause ?? "?"})`;
  }
  const idle = d.idleMs !== undefined ? `, idle ${duration(d.idleMs)}` : "";
  const queued = d.queued ? `, ${d.queued} queued` : "";
  return `${d.activity ?? ""}${idle}${queued}: ${d.reason ?? ""}`;
}

/** Stuck-session diagnostics (diagnostics.list + the `diagnostic` event), read-only, filtered by type and session. */
export function DiagnosticsPage(props: { model: ConsoleModel }) {
  const { model } = props;
  useModel(model);
  const [type, setType] = useState("");
  const [session, setSession] = useState("");
  const q = session.trim().toLowerCase();
  const rows = model.diagnostics.filter(
    (d) => (!type || d.type === type) && (!q || d.sessionKey.toLowerCase().includes(q)),
  );
  return (
    <section aria-labelledby="diag-h">
      <h1 id="diag-h">Diagnostics</h1>
      <McpServers model={model} />
      {!model.diagnosticsEnabled && model.diagnostics.length === 0 && (
        <p class="hint">Stuck-session diagnostics are off on this gateway (config diagnostics.enabled).</p>
      )}
      <div class="filters">
        <label>
          Type
          <select value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value)}>
            <option value="">any</option>
            {TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Session
          <input
            type="search"
            value={session}
            placeholder="session key"
            onInput={(e) => setSession((e.target as HTMLInputElement).value)}
          />
        </label>
      </div>
      <table class="list" data-testid="diagnostics">
        <caption class="sr-only">Diagnostics, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Type</th>
            <th scope="col">Session</th>
            <th scope="col" class="wide">
              What
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((d, i) => (
            <tr key={`${d.ts}-${d.type}-${i}`}>
              <td data-label="Time">{time(d.ts)}</td>
              <td data-label="Type">
                <span class={`status ${d.type.slice(8)}`}>{d.type}</span>
              </td>
              <td data-label="Session">
                <a href={sessionHref(d.sessionKey)}>{shortKey(d.sessionKey)}</a>
              </td>
              <td data-label="What" class="wide">
                {what(d)}
              </td>
            </tr>
          ))}
          {rows.length === 0 && (
            <tr>
              <td colSpan={4} class="empty">
                No diagnostics match.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}

/** Each MCP server's state, so a tool that is missing is never a mystery (mcp.status; `loopgate mcp list`). */
function McpServers(props: { model: ConsoleModel }) {
  const servers = props.model.mcpServers;
  if (servers.length === 0) return null;
  return (
    <div data-testid="mcp-servers">
      <h2>
        MCP servers{" "}
        <button type="button" onClick={() => void props.model.refreshMcp()}>
          Refresh
        </button>
      </h2>
      <ul>
        {servers.map((s) => (
          <li key={s.server}>
            <strong>{s.server}</strong> ({s.transport}): <span class={`status ${s.state}`}>{s.state}</span>,{" "}
            {s.toolCount} tools{s.lastError ? ` · last error: ${s.lastError}` : ""}
          </li>
        ))}
      </ul>
    </div>
  );
}
