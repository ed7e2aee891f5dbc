import { useState } from "preact/hooks";
import { sessionHref, shortKey, time } from "../format";
import { type ConsoleModel, useModel } from "../model";

/** Pending exec approvals (exec.approval.list + the requested/resolved events), answered with exec.approval.resolve. */
export function ApprovalsPage(props: { model: ConsoleModel }) {
  const { model } = props;
  useModel(model);
  const [error, setError] = useState<string | undefined>();
  const resolve = async (id: string, decision: string) => {
    setError(undefined);
    try {
      await model.gw.call("exec.approval.resolve", { id, decision });
      model.approvals = model.approvals.filter((a) => a.id !== id);
      model.changed();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <section aria-labelledby="approvals-h">
      <h1 id="approvals-h">Approvals</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {model.approvals.length === 0 && <p class="empty">No command is waiting for approval.</p>}
      <ul class="cards">
        {model.approvals.map((a) => (
          <li key={a.id} class="card" data-testid="approval">
            <pre class="command">{a.command}</pre>
            <p class="meta">
              <a href={sessionHref(a.sessionKey)}>{shortKey(a.sessionKey)}</a> · in {a.cwd} · expires{" "}
              {time(a.expiresAtMs)}
            </p>
            <p class="hint">{a.reason}</p>
            <fieldset class="actions">
              <legend class="sr-only">Answer for {a.command}</legend>
              <button type="button" onClick={() => resolve(a.id, "allow-once")}>
                Allow once
              </button>
              <button type="button" onClick={() => resolve(a.id, "allow-always")}>
                Allow always
              </button>
              <button type="button" class="danger" onClick={() => resolve(a.id, "deny")}>
                Deny
              </button>
            </fieldset>
          </li>
        ))}
      </ul>
    </section>
  );
}
