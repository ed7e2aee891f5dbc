import { Cron } from "croner";
import { CRON_JOB_LIMITS } from "../protocol/limits.js";

/**
 * A job's schedule: standard 5-field cron syntax (minute hour day-of-month month day-of-week), or 6 fields with
 * seconds first, in an IANA time zone (default: the process's). croner parses it and answers "when next, after t";
 * it never runs a timer of its own here, so the scheduler stays on the injected Clock and is tested without sleeping.
 */
export class CronSchedule {
  private readonly cron: Cron;

  constructor(
    readonly expr: string,
    readonly tz?: string,
  ) {
    const problem = scheduleProblem(expr) ?? (tz !== undefined ? timeZoneProblem(tz) : undefined);
    if (problem) throw new RangeError(problem);
    // paused and without a callback: croner only computes dates
    this.cron = new Cron(expr, { mode: "5-or-6-parts", paused: true, ...(tz ? { timezone: tz } : {}) });
  }

  /** The first fire time strictly after `afterMs`, or undefined when the pattern never matches again. */
  next(afterMs: number): number | undefined {
    return this.cron.nextRun(new Date(afterMs))?.getTime();
  }
}

/** Why `expr` is not a schedule we accept (undefined when it is one): for config and `cron.add` errors. */
export function scheduleProblem(expr: string): string | undefined {
  const tooLong = lengthProblem(expr, CRON_JOB_LIMITS.scheduleChars);
  if (tooLong) return tooLong;
  const fields = expr.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) {
    return `expected 5 cron fields (minute hour day month weekday) or 6 with seconds first; got ${fields} in "${expr}"`;
  }
  try {
    const probe = new Cron(expr, { mode: "5-or-6-parts", paused: true });
    if (probe.nextRun(new Date(0)) === null) return `"${expr}" never fires`;
  } catch (err) {
    return `not a cron schedule: ${(err as Error).message}`;
  }
  return undefined;
}

/** Why `tz` is not an IANA time zone name (undefined when it is one). */
export function timeZoneProblem(tz: string): string | undefined {
  const tooLong = lengthProblem(tz, CRON_JOB_LIMITS.tzChars);
  if (tooLong) return tooLong;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return undefined;
  } catch {
    return `unknown time zone "${tz}": expected an IANA name such as "Europe/Berlin" or "UTC"`;
  }
}

/** The same words as the schema's limit (protocol/params.ts cronText), for callers that skip the schema. */
function lengthProblem(text: string, max: number): string | undefined {
  return text.length > max ? `expected at most ${max} characters, got ${text.length}` : undefined;
}

/** zod superRefine for a job: the schedule and time-zone problems, each at its own key. */
export function checkJobTimes(
  job: { schedule: string; tz?: string },
  ctx: { addIssue(issue: { code: "custom"; message: string; path: string[] }): void },
): void {
  // zod runs this refinement even when a field failed its own check: an over-long field is reported once, there
  const s = job.schedule.length <= CRON_JOB_LIMITS.scheduleChars ? scheduleProblem(job.schedule) : undefined;
  if (s) ctx.addIssue({ code: "custom", message: s, path: ["schedule"] });
  const t = job.tz !== undefined && job.tz.length <= CRON_JOB_LIMITS.tzChars ? timeZoneProblem(job.tz) : undefined;
  if (t) ctx.addIssue({ code: "custom", message: t, path: ["tz"] });
}
