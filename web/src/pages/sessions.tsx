import { useEffect, useMemo, useState } from "preact/hooks";
import { ago, sessionHref, shortKey, tokens } from "../format";
import { canWrite } from "../gateway";
import { type ConsoleModel, type SessionInfo, useModel } from "../model";

type Filter = "all" | "running" | "queued" | "idle" | "stuck";

/** idle / running / queued N / stuck, as the list shows it */
export function sessionStatus(model: ConsoleModel, s: SessionInfo): { kind: Filter; label: string } {
  const stuck = model.stuck.get(s.key);
  if (stuck) return { kind: "stuck", label: stuck === "stuck" ? "stuck" : `stuck (${stuck})` };
  const a = s.activity;
  if (!a || a.state === "idle") return { kind: "idle", label: "idle" };
  if (a.state === "running") return { kind: "running", label: a.queued ? `running, queued ${a.queued}` : "running" };
  return { kind: "queued", label: `queued ${a.queued}` };
}

/** The model the session's newest watched run used (the record names only an override). */
function lastModel(model: ConsoleModel, key: string): string | undefined {
  return model
    .runsOf(key)
    .reverse()
    .find((r) => r.model)?.model;
}

export function SessionsPage(props: { model: ConsoleModel }) {
  const { model } = props;
  useModel(model);
  const [search, setSearch] = useState("");
  const [filter, setFilter] = useState<Filter>("all");
  // "12 s ago" keeps counting while nothing else changes
  const [, setNow] = useState(0);
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 10_000);
    return () => clearInterval(t);
  }, []);
  const rows = useMemo(() => {
    const q = search.trim().toLowerCase();
    return model.sessions
      .map((s) => ({ s, status: sessionStatus(model, s) }))
      .filter(
        ({ s, status }) =>
          (filter === "all" || status.kind === filter) &&
          (!q || `${s.key} ${s.label ?? ""} ${s.model ?? ""}`.toLowerCase().includes(q)),
      );
  }, [model.version, search, filter]);
  return (
    <section aria-labelledby="sessions-h">
      <div class="page-head">
        <h1 id="sessions-h">Sessions</h1>
        {canWrite(model.gw.scopes) && model.has("sessions.create") && <NewSession model={model} />}
      </div>
      <div class="filters">
        <label>
          Search
          <input
            type="search"
            value={search}
            placeholder="key, label or model"
            onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          Status
          <select value={filter} onChange={(e) => setFilter((e.target as HTMLSelectElement).value as Filter)}>
            <option value="all">all</option>
            <option value="running">running</option>
            <option value="queued">queued</option>
            <option value="idle">idle</option>
            <option value="stuck">stuck</option>
          </select>
        </label>
      </div>
      {model.sessionsError && (
        <p class="error" role="alert">
          {model.sessionsError}
        </p>
      )}
      <table class="list" data-testid="sessions">
        <caption class="sr-only">Sessions, most recently active first</caption>
        <thead>
          <tr>
            <th scope="col">Session</th>
            <th scope="col">Status</th>
            <th scope="col">Last activity</th>
            <th scope="col" class="wide">
              Model
            </th>
            <th scope="col" class="num">
              Tokens
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map(({ s, status }) => (
            <tr key={s.key} data-session={s.key}>
              <td data-label="Session">
                <a href={sessionHref(s.key)}>{s.label ?? shortKey(s.key)}</a>
              </td>
              <td data-label="Status">
                <span class={`status ${status.kind}`}>{status.label}</span>
                {s.sandbox && (
                  <span
                    class="sandbox"
                    title={`${s.sandbox.scope} scope, workspace ${s.sandbox.workspaceAccess}: ${s.sandbox.dir}`}
                  >
                    {" "}
                    · sandboxed ({s.sandbox.backend})
                  </span>
                )}
              </td>
              <td data-label="Last activity">{ago(s.updatedAt)}</td>
              <td data-label="Model" class="wide">
                {model.modelOf(s) ?? lastModel(model, s.key) ?? "—"}
              </td>
              <td data-label="Tokens" class="num">
                {tokens(s.totalTokens)}
              </td>
            </tr>
          ))}
          {rows.length === 0 && (
            <tr>
              <td colSpan={5} class="empty">
                {model.sessions.length ? "No session matches." : "No sessions yet. They appear here when a run starts."}
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}

/** sessions.create with an agent and a label; the console then opens the new session. */
function NewSession(props: { model: ConsoleModel }) {
  const { model } = props;
  const [open, setOpen] = useState(false);
  const [agentId, setAgentId] = useState("");
  const [label, setLabel] = useState("");
  const [error, setError] = useState<string | undefined>();
  if (!open) {
    return (
      <button type="button" onClick={() => setOpen(true)}>
        New session
      </button>
    );
  }
  const agents = model.agents.length ? model.agents : [{ id: model.defaultAgentId }];
  return (
    <form
      class="new-session filters"
      aria-label="New session"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(undefined);
        try {
          const res = await model.gw.call<{ key: string }>("sessions.create", {
            agentId: agentId || model.defaultAgentId,
            ...(label.trim() ? { label: label.trim() } : {}),
          });
          await model.refreshSessions();
          location.hash = sessionHref(res.key);
        } catch (err) {
          setError((err as Error).message);
        }
      }}
    >
      <label>
        Agent
        <select
          value={agentId || model.defaultAgentId}
          onChange={(e) => setAgentId((e.target as HTMLSelectElement).value)}
        >
          {agents.map((a) => (
            <option key={a.id} value={a.id}>
              {"name" in a && a.name ? `${a.name} (${a.id})` : a.id}
            </option>
          ))}
        </select>
      </label>
      <label>
        Label
        <input value={label} placeholder="optional" onInput={(e) => setLabel((e.target as HTMLInputElement).value)} />
      </label>
      <button type="submit">Create</button>
      <button type="button" onClick={() => setOpen(false)}>
        Cancel
      </button>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
