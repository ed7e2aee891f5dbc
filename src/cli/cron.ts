import type { CronJobSpec } from "../protocol/params.js";
import type {
  CronAddResult,
  CronJobInfo,
  CronListResult,
  CronRemoveResult,
  CronRunResult,
} from "../protocol/payloads.js";
import { withGateway } from "./agent-remote.js";
import { CliError, EXIT } from "./exit-codes.js";

/** `loopgate cron …`: every subcommand asks the running gateway, which owns the scheduler and its store. */

export interface CronCliTarget {
  url?: string;
  token?: string;
  config?: string;
}

export interface CronAddCliOptions extends CronCliTarget {
  id: string;
  schedule: string;
  message: string;
  tz?: string;
  agent?: string;
  sessionKey?: string;
  timeout?: string;
  model?: string;
  disabled?: boolean;
}

const time = (ms: number | undefined) => (ms === undefined ? "-" : new Date(ms).toISOString());

/** One line per job: id, schedule (tz), next run, last result. */
export function formatJobs(result: CronListResult): string {
  if (result.jobs.length === 0) return `no cron jobs${result.enabled ? "" : " (cron is disabled)"}`;
  const lines = result.jobs.map((j: CronJobInfo) => {
    const last = j.runs[0];
    const lastText = last
      ? `last ${last.status}${last.errorKind ? ` (${last.errorKind})` : ""} ${time(last.scheduledAt)}`
      : "never ran";
    const state = j.enabled ? `next ${time(j.nextRunAt)}` : "disabled";
    return `${j.id}  "${j.schedule}"${j.tz ? ` ${j.tz}` : ""}  ${j.source}  ${state}  ${lastText}  → ${j.sessionKey}`;
  });
  if (!result.enabled) lines.unshift("cron is disabled (cron.enabled: false): jobs are listed but do not run");
  return lines.join("\n");
}

export async function runCronList(opts: CronCliTarget & { json?: boolean; runs?: string }): Promise<number> {
  const runs = opts.runs === undefined ? undefined : Number(opts.runs);
  if (runs !== undefined && !(Number.isInteger(runs) && runs >= 0 && runs <= 100)) {
    throw new CliError("--runs: expected a whole number from 0 to 100", EXIT.usage);
  }
  const result = await withGateway(opts, ["operator.read"], (call) =>
    call<CronListResult>("cron.list", runs === undefined ? {} : { runs }),
  );
  process.stdout.write(`${opts.json ? JSON.stringify(result) : formatJobs(result)}\n`);
  return EXIT.ok;
}

export async function runCronAdd(opts: CronAddCliOptions): Promise<number> {
  const timeout = opts.timeout === undefined ? undefined : Number(opts.timeout);
  if (timeout !== undefined && !(Number.isInteger(timeout) && timeout > 0)) {
    throw new CliError("--timeout: expected a whole number of seconds above 0", EXIT.usage);
  }
  const spec: CronJobSpec = {
    id: opts.id,
    schedule: opts.schedule,
    message: opts.message,
    ...(opts.tz !== undefined ? { tz: opts.tz } : {}),
    ...(opts.agent !== undefined ? { agentId: opts.agent } : {}),
    ...(opts.sessionKey !== undefined ? { sessionKey: opts.sessionKey } : {}),
    ...(timeout !== undefined ? { timeoutSeconds: timeout } : {}),
    ...(opts.model !== undefined ? { model: opts.model } : {}),
    ...(opts.disabled ? { enabled: false } : {}),
  };
  const { job } = await withGateway(opts, ["operator.admin"], (call) => call<CronAddResult>("cron.add", spec));
  process.stdout.write(`added ${job.id}: next run ${time(job.nextRunAt)}\n`);
  return EXIT.ok;
}

export async function runCronRemove(id: string, opts: CronCliTarget): Promise<number> {
  await withGateway(opts, ["operator.admin"], (call) => call<CronRemoveResult>("cron.remove", { id }));
  process.stdout.write(`removed ${id}\n`);
  return EXIT.ok;
}

export async function runCronRun(id: string, opts: CronCliTarget & { json?: boolean }): Promise<number> {
  const result = await withGateway(opts, ["operator.admin"], (call) => call<CronRunResult>("cron.run", { id }));
  process.stdout.write(opts.json ? `${JSON.stringify(result)}\n` : `started ${id}: run ${result.runId}\n`);
  return EXIT.ok;
}
