import { ApprovalCard } from "../components/approval-card";
import { type ConsoleModel, useModel } from "../model";

/** Every pending approval, of every kind the gateway has (approvals.ts), answered in place. */
export function ApprovalsPage(props: { model: ConsoleModel }) {
  const { model } = props;
  useModel(model);
  return (
    <section aria-labelledby="approvals-h">
      <h1 id="approvals-h">Approvals</h1>
      {model.approvals.length === 0 && <p class="empty">Nothing is waiting for approval.</p>}
      <ul class="cards">
        {model.approvals.map((a) => (
          <li key={`${a.kind}:${a.id}`}>
            <ApprovalCard model={model} approval={a} showSession />
          </li>
        ))}
      </ul>
    </section>
  );
}
