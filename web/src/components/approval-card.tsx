/**
 * One pending approval, whatever its kind (approvals.ts): what is asked, why, a countdown to its expiry, and the
 * kind's answers. Used on the Approvals page and inline in the session whose run waits for it.
 */
import { useEffect, useState } from "preact/hooks";
import { approvalKind, type PendingApproval } from "../approvals";
import { countdown, sessionHref, shortKey } from "../format";
import type { ConsoleModel } from "../model";

/** The current time, re-read every `ms` while the calling component is shown (countdowns). */
export function useNow(ms: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

export function ApprovalCard(props: {
  model: ConsoleModel;
  approval: PendingApproval;
  /** on the session page the session is known: no link to it */
  showSession?: boolean;
}) {
  const { model, approval: a } = props;
  const now = useNow(1000);
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const kind = approvalKind(a.kind);
  const answer = async (decision: string) => {
    setError(undefined);
    setBusy(true);
    try {
      await model.answerApproval(a, decision);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const left = countdown(a.expiresAtMs, now);
  return (
    <section class="card approval" data-testid="approval" data-kind={a.kind} aria-label={`Approval: ${a.title}`}>
      <p class="approval-head">
        <span class="badge">{a.kind}</span> <span>{a.subject}</span>
        <span
          class="countdown"
          data-testid="countdown"
          title={a.expiresAtMs ? new Date(a.expiresAtMs).toLocaleString() : undefined}
        >
          {left}
        </span>
      </p>
      <pre class="command">{a.title}</pre>
      {props.showSession && (
        <p class="meta">
          <a href={sessionHref(a.sessionKey)}>{shortKey(a.sessionKey)}</a>
        </p>
      )}
      {a.reason && <p class="hint">{a.reason}</p>}
      {model.canApprove() ? (
        <fieldset class="actions">
          <legend class="sr-only">Answer for {a.title}</legend>
          {(kind?.answers ?? []).map((x) => (
            <button
              key={x.decision}
              type="button"
              class={x.danger ? "danger" : undefined}
              disabled={busy || left === "expired"}
              onClick={() => answer(x.decision)}
            >
              {x.label}
            </button>
          ))}
        </fieldset>
      ) : (
        <p class="hint">This token cannot answer approvals (it lacks operator.approvals).</p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
