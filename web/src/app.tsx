/**
 * The console shell: the token form (the token is kept in sessionStorage, so it is typed once per tab and gone when
 * the tab closes), the connection banner, the navigation, and the hash router (#/sessions, #/session/<key>, #/runs,
 * #/approvals, #/audit, #/usage, #/diagnostics, and the operator pages #/cron, #/skills, #/config, #/exec-policy,
 * #/logs). Hash routes need no server-side fallback page.
 */
import { useEffect, useMemo, useState } from "preact/hooks";
import { type ConnState, canWrite, GatewayClient, gatewayUrl } from "./gateway";
import { ConsoleModel, useModel } from "./model";
import { ApprovalsPage } from "./pages/approvals";
import { AuditPage } from "./pages/audit";
import { DiagnosticsPage } from "./pages/diagnostics";
import { isOperatorPage, OperatorPage } from "./pages/operator-pages";
import { RunsPage } from "./pages/runs";
import { SessionPage } from "./pages/session";
import { SessionsPage } from "./pages/sessions";
import { UsagePage } from "./pages/usage";

const TOKEN_KEY = "loopgate.console.token";

function useHashRoute(): string[] {
  const read = () => (location.hash.replace(/^#\/?/, "") || "sessions").split("/").map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

export function App() {
  const [token, setToken] = useState<string | null>(() => sessionStorage.getItem(TOKEN_KEY));
  if (token === null) {
    return (
      <Login
        onSubmit={(t) => {
          sessionStorage.setItem(TOKEN_KEY, t);
          setToken(t);
        }}
      />
    );
  }
  return (
    <Connected
      key={token}
      token={token}
      onSignOut={(message) => {
        sessionStorage.removeItem(TOKEN_KEY);
        if (message) sessionStorage.setItem(`${TOKEN_KEY}.refused`, message);
        setToken(null);
      }}
    />
  );
}

function Login(props: { onSubmit(token: string): void }) {
  const refused = useMemo(() => {
    const m = sessionStorage.getItem(`${TOKEN_KEY}.refused`);
    sessionStorage.removeItem(`${TOKEN_KEY}.refused`);
    return m;
  }, []);
  const [value, setValue] = useState("");
  return (
    <main class="login">
      <h1>Loopgate console</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          props.onSubmit(value.trim());
        }}
      >
        <label for="token">Gateway token</label>
        <input
          id="token"
          type="password"
          autocomplete="current-password"
          value={value}
          onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          aria-describedby="token-help"
          autofocus
        />
        <p id="token-help" class="hint">
          Kept in this tab only (session storage). Leave it empty for a gateway without a token.
        </p>
        {refused && (
          <p class="error" role="alert">
            The gateway refused this token: {refused}
          </p>
        )}
        <button type="submit">Connect</button>
      </form>
    </main>
  );
}

function stateText(s: ConnState): string {
  switch (s.kind) {
    case "open":
      return "connected";
    case "connecting":
      return s.attempt ? `reconnecting (attempt ${s.attempt + 1})…` : "connecting…";
    case "unreachable":
      return `gateway unreachable, retrying in ${Math.ceil(s.retryInMs / 1000)} s`;
    case "refused":
      return "refused";
  }
}

function Connected(props: { token: string; onSignOut(message?: string): void }) {
  const model = useMemo(() => new ConsoleModel(new GatewayClient(gatewayUrl(), props.token)), [props.token]);
  const [conn, setConn] = useState<ConnState>(model.gw.state);
  useModel(model);
  useEffect(() => {
    const off = model.gw.onState((s) => {
      setConn(s);
      if (s.kind === "refused") props.onSignOut(s.message);
    });
    model.gw.start();
    return () => {
      off();
      model.gw.stop();
    };
  }, [model]);
  const route = useHashRoute();
  const scopes = model.gw.scopes;
  const writable = canWrite(scopes);
  const admin = scopes.includes("operator.admin");
  const has = (m: string) => model.has(m);
  const nav: Array<[string, string, boolean]> = [
    ["sessions", "Sessions", true],
    ["runs", "Runs", has("runs.list")],
    [
      "approvals",
      `Approvals${model.approvals.length ? ` (${model.approvals.length})` : ""}`,
      has("exec.approval.list") && model.canApprove(),
    ],
    ["audit", "Audit", has("audit.list")],
    ["usage", "Usage", has("usage.summary")],
    ["diagnostics", "Diagnostics", has("diagnostics.list")],
    // operator pages (lazy chunks): config, exec policy and logs are operator.admin reads
    ["cron", "Cron", has("cron.list")],
    ["skills", "Skills", has("skills.status")],
    ["config", "Config", has("config.get") && admin],
    ["exec-policy", "Exec policy", has("exec.approvals.get") && admin],
    ["logs", "Logs", has("logs.tail") && admin],
  ];
  const page = route[0];
  return (
    <>
      <header class="top">
        <a class="brand" href="#/sessions">
          Loopgate
        </a>
        <nav aria-label="Console pages">
          <ul>
            {nav
              .filter(([, , shown]) => shown)
              .map(([id, label]) => (
                <li key={id}>
                  <a
                    href={`#/${id}`}
                    aria-current={page === id || (id === "sessions" && page === "session") ? "page" : undefined}
                  >
                    {label}
                  </a>
                </li>
              ))}
          </ul>
        </nav>
        <div class="conn">
          <span class={`dot ${conn.kind}`} aria-hidden="true" />
          <span role="status" aria-live="polite" data-testid="conn-state">
            {stateText(conn)}
          </span>
          {conn.kind === "open" && !writable && (
            <span class="badge" data-testid="read-only">
              read-only
            </span>
          )}
          <button type="button" class="link" onClick={() => props.onSignOut()}>
            Sign out
          </button>
        </div>
      </header>
      {conn.kind === "unreachable" && (
        <div class="banner" role="alert" data-testid="unreachable">
          The gateway at {gatewayUrl()} is unreachable. The console reconnects by itself and picks up where it left off.
        </div>
      )}
      <main id="main">
        {page === "session" && route[1] ? (
          <SessionPage model={model} sessionKey={route.slice(1).join("/")} writable={writable} />
        ) : page === "runs" ? (
          <RunsPage model={model} />
        ) : page === "approvals" ? (
          <ApprovalsPage model={model} />
        ) : page === "audit" ? (
          <AuditPage model={model} />
        ) : page === "usage" ? (
          <UsagePage model={model} />
        ) : page === "diagnostics" && has("diagnostics.list") ? (
          <DiagnosticsPage model={model} />
        ) : isOperatorPage(page) ? (
          <OperatorPage name={page} model={model} />
        ) : (
          <SessionsPage model={model} />
        )}
      </main>
    </>
  );
}
