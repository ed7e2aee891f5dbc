import { useEffect, useState } from "preact/hooks";
import type { AuditEvent, AuditListResult } from "../../../src/protocol/payloads";
import { sessionHref, shortActor, shortKey, time } from "../format";
import type { ConsoleModel } from "../model";

const ACTIONS = [
  "",
  "agent.run.started",
  "agent.run.finished",
  "tool.action.started",
  "tool.action.finished",
  "model.auth.rotated",
];
const STATUSES = ["", "started", "succeeded", "failed", "cancelled", "timed_out", "blocked", "unknown"];

/** The audit ledger (audit.list), read-only, with its filters and a cursor for older pages. */
export function AuditPage(props: { model: ConsoleModel }) {
  const { model } = props;
  const [session, setSession] = useState("");
  const [action, setAction] = useState("");
  const [status, setStatus] = useState("");
  const [rows, setRows] = useState<AuditEvent[]>([]);
  const [cursor, setCursor] = useState<string | undefined>();
  const [dropped, setDropped] = useState(0);
  const [error, setError] = useState<string | undefined>();
  const open = model.gw.state.kind === "open";
  const load = async (more: boolean) => {
    try {
      const res = await model.gw.call<AuditListResult>("audit.list", {
        limit: 100,
        ...(session.trim() ? { sessionKey: session.trim() } : {}),
        ...(action ? { action } : {}),
        ...(status ? { status } : {}),
        ...(more && cursor ? { cursor } : {}),
      });
      setRows(more ? [...rows, ...res.events] : res.events);
      setCursor(res.nextCursor);
      setDropped(res.dropped);
      setError(undefined);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  useEffect(() => {
    if (open) void load(false);
  }, [open, action, status]);
  return (
    <section aria-labelledby="audit-h">
      <h1 id="audit-h">Audit</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          void load(false);
        }}
      >
        <label>
          Session
          <input
            value={session}
            placeholder="session key"
            onInput={(e) => setSession((e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          Action
          <select value={action} onChange={(e) => setAction((e.target as HTMLSelectElement).value)}>
            {ACTIONS.map((a) => (
              <option key={a} value={a}>
                {a || "any"}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s || "any"}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Filter</button>
      </form>
      {dropped > 0 && (
        <p class="hint">The ledger dropped {dropped} rows since the gateway started (its queue was full).</p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <table class="list" data-testid="audit">
        <caption class="sr-only">Audit ledger, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Action</th>
            <th scope="col">Status</th>
            <th scope="col">Session</th>
            <th scope="col" class="wide">
              Actor
            </th>
            <th scope="col" class="wide">
              Tool / code
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.eventId}>
              <td data-label="Time">{time(r.occurredAt)}</td>
              <td data-label="Action">{r.action}</td>
              <td data-label="Status">
                <span class={`status ${r.status}`}>{r.status}</span>
              </td>
              <td data-label="Session">
                <a href={sessionHref(r.sessionKey)}>{shortKey(r.sessionKey)}</a>
              </td>
              <td data-label="Actor" class="wide" title={shortActor(r.actor).full} data-testid="audit-actor">
                {shortActor(r.actor).text}
              </td>
              <td data-label="Tool / code" class="wide">
                {[r.toolName, r.code].filter(Boolean).join(" · ") || "—"}
              </td>
            </tr>
          ))}
          {rows.length === 0 && (
            <tr>
              <td colSpan={6} class="empty">
                No audit rows match.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {cursor && (
        <button type="button" onClick={() => load(true)}>
          Older rows
        </button>
      )}
    </section>
  );
}
