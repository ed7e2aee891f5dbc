/**
 * The operator methods behind the console's operator pages (issue 31): cron.update / cron.runs, logs.tail,
 * config.schema, skills.status / skills.update, plugins.list / plugins.setEnabled, exec.approvals.get / set. Names
 * and param names are OpenClaw's; the params each take are the subset Loopgate acts on. exec.approvals.set's
 * allowlist is checked by the gateway with the config's own schema (tools.exec.allowlist), which this leaf cannot
 * import.
 */
import { z } from "zod";
import type { CronRunInfo } from "./payloads.js";

const nonEmpty = z.string().min(1);

/** a job named as `id` or `jobId` (OpenClaw accepts both, as cron.remove / cron.run do) */
const jobIdRequired = (p: { id?: string; jobId?: string }, ctx: z.RefinementCtx) => {
  if (p.id === undefined && p.jobId === undefined) ctx.addIssue({ code: "custom", message: "required", path: ["id"] });
};

/**
 * cron.update: OpenClaw's `{id, patch}`. Loopgate changes `enabled` only (a job's schedule or message is changed by
 * removing and adding it), so any other patch key is refused by name.
 */
export const cronUpdateParamsSchema = z
  .strictObject({
    id: nonEmpty.optional(),
    jobId: nonEmpty.optional(),
    patch: z.strictObject({ enabled: z.boolean() }),
  })
  .superRefine(jobIdRequired)
  .transform((p) => ({ id: (p.id ?? p.jobId) as string, patch: p.patch }));

/** cron.runs: a job's run history, newest first (as many as cron.runLog.keepLines keeps) */
export const cronRunsParamsSchema = z
  .strictObject({
    id: nonEmpty.optional(),
    jobId: nonEmpty.optional(),
    limit: z.number().int().min(1).max(500).optional(),
  })
  .superRefine(jobIdRequired)
  .transform((p) => ({ id: (p.id ?? p.jobId) as string, limit: p.limit }));

export interface CronRunsResult {
  id: string;
  entries: CronRunInfo[];
}

export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export type LogLineLevel = (typeof LOG_LEVELS)[number];

/** logs.tail: OpenClaw's `{cursor, limit, maxBytes}`, plus `level` (the least level a line must have) */
export const logsTailParamsSchema = z.strictObject({
  /** the byte offset the previous answer returned; absent: the last `limit` lines */
  cursor: z.number().int().min(0).optional(),
  limit: z.number().int().min(1).max(5000).optional(),
  maxBytes: z
    .number()
    .int()
    .min(1)
    .max(1024 * 1024)
    .optional(),
  level: z.enum(LOG_LEVELS).optional(),
});

export interface LogLine {
  /** undefined for a line that is not one of the gateway's (a stack trace's continuation) */
  level?: LogLineLevel;
  text: string;
}

export interface LogsTailResult {
  /** the gateway log file; undefined when this gateway writes none (started without `loopgate gateway`) */
  file?: string;
  /** pass it back as `cursor` to read what was appended since */
  cursor: number;
  size: number;
  lines: LogLine[];
  /** older lines were left out (limit / maxBytes) */
  truncated: boolean;
  /** the file was rotated or truncated since `cursor`: reading started again at its beginning */
  reset: boolean;
}

/** config.schema: the config's JSON Schema (zod → JSON Schema); `description`s are the help the console shows */
export interface ConfigSchemaResult {
  schema: unknown;
  /** key path ("gateway.port", "models.providers.*.apiKey") → its help text */
  help: Record<string, string>;
}

export interface SkillStatusEntry {
  name: string;
  description: string;
  /** where it was found (its folder) */
  dir: string;
  /** false when an operator switched it off (skills.update); it is left out of the prompt from the next run */
  enabled: boolean;
  /** env vars it needs that the gateway does not have: held back from the prompt until they are set */
  missingEnv: string[];
}

/** skills.status: the skills of one agent (its workspace's skills/ and skills.dirs) */
export const skillsStatusParamsSchema = z.strictObject({ agentId: nonEmpty.optional() });

export interface SkillsStatusResult {
  agentId: string;
  skills: SkillStatusEntry[];
  warnings: string[];
}

/** skills.update: OpenClaw's `{skillKey, enabled}`; Loopgate's skill key is the skill's name */
export const skillsUpdateParamsSchema = z.strictObject({
  skillKey: nonEmpty.max(256),
  enabled: z.boolean(),
});

export interface PluginStatusEntry {
  id: string;
  /** loaded now */
  loaded: boolean;
  /** what the next start does: false when plugins.entries.<id>.enabled or an operator's switch says off */
  enabled: boolean;
  /** why it did not load */
  error?: string;
}

export interface PluginsListResult {
  plugins: PluginStatusEntry[];
}

/** plugins.setEnabled: `{pluginId, enabled}` (`id` accepted too) */
export const pluginsSetEnabledParamsSchema = z
  .strictObject({ pluginId: nonEmpty.max(256).optional(), id: nonEmpty.max(256).optional(), enabled: z.boolean() })
  .superRefine((p, ctx) => {
    if (p.pluginId === undefined && p.id === undefined)
      ctx.addIssue({ code: "custom", message: "required", path: ["pluginId"] });
  })
  .transform((p) => ({ pluginId: (p.pluginId ?? p.id) as string, enabled: p.enabled }));

export interface ToggleResult {
  ok: true;
  enabled: boolean;
  /** when the switch acts: "next run" (skills) or "next start" (plugins are loaded once) */
  appliesAt: "next run" | "next start";
}

export interface ExecApprovalsFileView {
  version: 2;
  /** operators' patterns, added to tools.exec.allowlist */
  allowlist: string[];
  /** commands answered allow-always (masked; matched by hash) */
  allowAlways: Array<{ agentId: string; command: string; sessions?: string[]; addedAtMs: number }>;
}

export interface ExecApprovalsGetResult {
  path: string;
  exists: boolean;
  /** pass back as baseHash to exec.approvals.set: a change by someone else meanwhile is refused, not overwritten */
  hash: string;
  file: ExecApprovalsFileView;
  /** the config's side, read-only here: tools.exec.security / ask / allowlist */
  config: { security: string; ask: string; allowlist: string[] };
}
