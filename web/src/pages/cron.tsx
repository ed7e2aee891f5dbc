import { useEffect, useState } from "preact/hooks";
import type { CronRunsResult } from "../../../src/protocol/operator";
import type { CronJobInfo, CronListResult, CronRunInfo } from "../../../src/protocol/payloads";
import { ago, sessionHref, shortKey, time } from "../format";
import type { ConsoleModel } from "../model";
import { ErrorLine, isAdmin, NEEDS_ADMIN, Switch, useAction, useRpc } from "./operator-common";

/** The page re-reads the jobs (and an open history) this often: a run started here ends while it is watched. */
const REFRESH_MS = 3000;

function useRefresh(reload: () => Promise<void>): void {
  useEffect(() => {
    const timer = setInterval(() => void reload(), REFRESH_MS);
    return () => clearInterval(timer);
  }, [reload]);
}

function when(ts: number | undefined): string {
  return ts ? `${new Date(ts).toLocaleDateString()} ${time(ts)}` : "—";
}

/** Cron jobs (cron.list): add, run now, enable/disable (cron.update), remove, and each job's run history (cron.runs). */
export function CronPage(props: { model: ConsoleModel }) {
  const { model } = props;
  const jobs = useRpc<CronListResult>(model, "cron.list", { runs: 1 });
  useRefresh(jobs.reload);
  const admin = isAdmin(model);
  const action = useAction();
  const [open, setOpen] = useState<string | undefined>();
  const [started, setStarted] = useState<string | undefined>();
  const act = async (method: string, params: unknown) => {
    const ok = await action.run(() => model.gw.call(method, params));
    if (ok) await jobs.reload();
    return ok;
  };
  return (
    <section aria-labelledby="cron-h">
      <h1 id="cron-h">Cron</h1>
      <ErrorLine error={jobs.error} />
      {jobs.data && !jobs.data.enabled && (
        <p class="hint">Cron is off on this gateway (config cron.enabled): jobs are listed but none runs.</p>
      )}
      <ErrorLine error={action.error} />
      {started && (
        <p class="hint" role="status">
          {started}
        </p>
      )}
      <table class="list" data-testid="cron-jobs">
        <caption class="sr-only">Cron jobs</caption>
        <thead>
          <tr>
            <th scope="col">Job</th>
            <th scope="col">Schedule</th>
            <th scope="col">Next run</th>
            <th scope="col">Last run</th>
            <th scope="col">Enabled</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(jobs.data?.jobs ?? []).map((j) => (
            <JobRow
              key={j.id}
              job={j}
              admin={admin}
              busy={action.busy}
              open={open === j.id}
              onToggleHistory={() => setOpen(open === j.id ? undefined : j.id)}
              onEnable={(enabled) => act("cron.update", { id: j.id, patch: { enabled } })}
              onRun={async () => {
                setStarted(undefined);
                const ok = await action.run(async () => {
                  const res = await model.gw.call<{ runId: string }>("cron.run", { id: j.id });
                  setStarted(`Job ${j.id} started: run ${res.runId}`);
                });
                if (ok) await jobs.reload();
              }}
              onRemove={() => act("cron.remove", { id: j.id })}
              model={model}
            />
          ))}
          {jobs.data && jobs.data.jobs.length === 0 && (
            <tr>
              <td colSpan={6} class="empty">
                No cron jobs yet.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <AddJob model={model} admin={admin} onAdded={() => jobs.reload()} />
    </section>
  );
}

function JobRow(props: {
  job: CronJobInfo;
  admin: boolean;
  busy: boolean;
  open: boolean;
  model: ConsoleModel;
  onToggleHistory(): void;
  onEnable(enabled: boolean): Promise<boolean>;
  onRun(): void;
  onRemove(): void;
}) {
  const { job, admin } = props;
  const last = job.runs[0];
  const fromConfig = job.source === "config";
  const toggleTitle = !admin ? NEEDS_ADMIN : fromConfig ? "a config job: switch it in cron.jobs" : undefined;
  return (
    <>
      <tr data-testid={`cron-job-${job.id}`}>
        <td data-label="Job">
          {/* one box: on a phone the cell is a label beside its content */}
          <div>
            <strong>{job.id}</strong>
            <div class="meta">
              <a href={sessionHref(job.sessionKey)}>{shortKey(job.sessionKey)}</a>
              {fromConfig ? " · from config" : ""}
            </div>
            <div class="op-help">{job.message}</div>
          </div>
        </td>
        <td data-label="Schedule" class="op-key">
          {job.schedule}
          {job.tz ? ` (${job.tz})` : ""}
        </td>
        <td data-label="Next run">{when(job.nextRunAt)}</td>
        <td data-label="Last run">
          {last ? (
            <span>
              <span class={`status ${last.status}`}>{last.status}</span> {ago(last.endedAt ?? last.scheduledAt)}
            </span>
          ) : (
            "—"
          )}
        </td>
        <td data-label="Enabled">
          <Switch
            checked={job.enabled}
            disabled={!admin || fromConfig}
            title={toggleTitle}
            label={`job ${job.id}`}
            on="on"
            off="off"
            onChange={props.onEnable}
          />
        </td>
        <td data-label="Actions">
          <div class="op-row-actions">
            <button
              type="button"
              disabled={!admin || props.busy}
              title={admin ? undefined : NEEDS_ADMIN}
              onClick={props.onRun}
            >
              Run now<span class="sr-only"> {job.id}</span>
            </button>
            <button type="button" aria-expanded={props.open} onClick={props.onToggleHistory}>
              History<span class="sr-only"> of {job.id}</span>
            </button>
            {!fromConfig && (
              <button
                type="button"
                class="danger"
                disabled={!admin || props.busy}
                title={admin ? undefined : NEEDS_ADMIN}
                onClick={props.onRemove}
              >
                Remove<span class="sr-only"> {job.id}</span>
              </button>
            )}
          </div>
        </td>
      </tr>
      {props.open && (
        <tr>
          <td colSpan={6} class="empty">
            <History model={props.model} id={job.id} />
          </td>
        </tr>
      )}
    </>
  );
}

function History(props: { model: ConsoleModel; id: string }) {
  const runs = useRpc<CronRunsResult>(props.model, "cron.runs", { id: props.id, limit: 50 });
  useRefresh(runs.reload);
  const rows: CronRunInfo[] = runs.data?.entries ?? [];
  return (
    <div data-testid="cron-history">
      <ErrorLine error={runs.error} />
      {runs.data && rows.length === 0 && <p class="empty">No runs yet.</p>}
      {rows.length > 0 && (
        <table class="list op-history">
          <caption class="sr-only">Runs of {props.id}, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Due</th>
              <th scope="col">Status</th>
              <th scope="col">Ended</th>
              <th scope="col">Run</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              <tr key={`${r.scheduledAt}-${i}`}>
                <td data-label="Due">{when(r.scheduledAt)}</td>
                <td data-label="Status">
                  <span>
                    <span class={`status ${r.status}`}>{r.status}</span>
                    {r.errorKind ? ` ${r.errorKind}` : ""}
                  </span>
                </td>
                <td data-label="Ended">{when(r.endedAt)}</td>
                <td data-label="Run" class="op-key">
                  {r.runId ? r.runId.slice(0, 8) : "—"}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function AddJob(props: { model: ConsoleModel; admin: boolean; onAdded(): void }) {
  const action = useAction();
  const [form, setForm] = useState({ id: "", schedule: "", tz: "", message: "" });
  const field = (name: keyof typeof form) => ({
    value: form[name],
    disabled: !props.admin,
    onInput: (e: Event) => setForm({ ...form, [name]: (e.target as HTMLInputElement).value }),
  });
  return (
    <section class="op-section" aria-labelledby="cron-add-h">
      <h2 id="cron-add-h">Add a job</h2>
      {!props.admin && <p class="hint">{NEEDS_ADMIN}</p>}
      <form
        class="op-form"
        onSubmit={async (e) => {
          e.preventDefault();
          const spec = {
            id: form.id.trim(),
            schedule: form.schedule.trim(),
            message: form.message,
            ...(form.tz.trim() ? { tz: form.tz.trim() } : {}),
          };
          if (await action.run(() => props.model.gw.call("cron.add", spec))) {
            setForm({ id: "", schedule: "", tz: "", message: "" });
            props.onAdded();
          }
        }}
      >
        <label>
          Job id
          <input required placeholder="nightly-report" {...field("id")} />
        </label>
        <label>
          Schedule (cron)
          <input required placeholder="0 7 * * *" {...field("schedule")} />
        </label>
        <label>
          Time zone
          <input placeholder="optional: Europe/Berlin" {...field("tz")} />
        </label>
        <label>
          Message
          <input required placeholder="Summarise yesterday's tickets" {...field("message")} />
        </label>
        <button type="submit" disabled={!props.admin || action.busy}>
          Add job
        </button>
      </form>
      <ErrorLine error={action.error} />
    </section>
  );
}
