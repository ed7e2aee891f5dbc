import { useEffect, useRef, useState } from "preact/hooks";
import type { ExecApprovalsGetResult } from "../../../src/protocol/operator";
import { ago } from "../format";
import type { ConsoleModel } from "../model";
import { AdminOnly, ErrorLine, useAction, useRpc } from "./operator-common";

/**
 * The exec policy: tools.exec from the config (read-only), the operators' allowlist patterns (exec.approvals.get /
 * set, checked by the gateway with the config's own allowlist rules) and the commands answered allow-always.
 */
export function ExecPolicyPage(props: { model: ConsoleModel }) {
  return (
    <AdminOnly model={props.model} title="Exec policy">
      <ExecPolicy model={props.model} />
    </AdminOnly>
  );
}

function ExecPolicy(props: { model: ConsoleModel }) {
  const { model } = props;
  const policy = useRpc<ExecApprovalsGetResult>(model, "exec.approvals.get");
  const action = useAction();
  const [text, setText] = useState("");
  const [saved, setSaved] = useState(false);
  // Typed since the patterns were last loaded or saved: a load that lands after the user started typing (its effect
  // runs after the page is painted) must not put the stored text back over theirs.
  const edited = useRef(false);
  const box = useRef<HTMLTextAreaElement>(null);
  const data = policy.data;
  useEffect(() => {
    if (data && !edited.current) setText(data.file.allowlist.join("\n"));
  }, [data]);
  return (
    <section aria-labelledby="exec-h">
      <h1 id="exec-h">Exec policy</h1>
      <ErrorLine error={policy.error} />
      {data && (
        <>
          <p class="hint" data-testid="exec-config">
            From the config (tools.exec): security <strong>{data.config.security}</strong>, ask{" "}
            <strong>{data.config.ask}</strong>
            {data.config.allowlist.length ? `, allowlist ${data.config.allowlist.join(", ")}` : ", no allowlist"}.
          </p>
          <form
            onSubmit={async (e) => {
              e.preventDefault();
              setSaved(false);
              // what the box holds now, not the last render's state: a click right after typing can come first
              const patterns = (box.current?.value ?? text)
                .split("\n")
                .map((l) => l.trim())
                .filter((l) => l !== "");
              const ok = await action.run(() =>
                model.gw.call("exec.approvals.set", { file: { allowlist: patterns }, baseHash: data.hash }),
              );
              if (ok) {
                edited.current = false;
                setSaved(true);
                await policy.reload();
              }
            }}
          >
            <label for="exec-patterns">
              <h2>Allowlist patterns</h2>
            </label>
            <p class="hint" id="exec-patterns-help">
              One glob pattern per line (e.g. <code>git *</code>): a command whose every part matches one runs without
              asking. Added to the config's allowlist, saved in {data.path}, effective at once.
            </p>
            <textarea
              id="exec-patterns"
              class="op-patterns"
              aria-describedby="exec-patterns-help"
              ref={box}
              value={text}
              onInput={(e) => {
                edited.current = true;
                setSaved(false);
                setText(e.currentTarget.value);
              }}
            />
            <div class="op-row-actions">
              <button type="submit" disabled={action.busy}>
                Save allowlist
              </button>
              {saved && (
                <span role="status" class="hint">
                  Saved.
                </span>
              )}
            </div>
            <ErrorLine error={action.error} />
          </form>
          <h2 class="op-section">Answered allow-always</h2>
          {data.file.allowAlways.length === 0 && <p class="empty">No command was answered allow-always.</p>}
          <ul data-testid="allow-always">
            {data.file.allowAlways.map((a) => (
              <li key={`${a.agentId}-${a.command}-${a.addedAtMs}`}>
                <code>{a.command}</code> <span class="meta">agent {a.agentId}</span>
                {a.sessions ? <span class="meta"> · sessions {a.sessions.join(", ")}</span> : null}{" "}
                <span class="meta">· {ago(a.addedAtMs)}</span>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
