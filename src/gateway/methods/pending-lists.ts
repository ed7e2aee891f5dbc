import { looseEmptyParamsSchema } from "../../protocol/params.js";
import { defineMethod } from "../context.js";
import { visibleCron } from "./health.js";

/*
 * Lists OpenClaw's operator clients poll for features Loopgate has nothing pending in: plugin approvals and agent
 * questions do not exist here, so the answer is an empty list (never an error that would make a client give up).
 * cron.status reports the scheduler.
 */

export const pluginApprovalListMethod = defineMethod({
  name: "plugin.approval.list",
  scope: "approvals",
  params: looseEmptyParamsSchema,
  handle({ reply }) {
    reply.ok({ approvals: [] });
  },
});

export const questionListMethod = defineMethod({
  name: "question.list",
  scope: "read",
  params: looseEmptyParamsSchema,
  handle({ reply }) {
    reply.ok({ questions: [] });
  },
});

/** The scheduler's state: whether it runs jobs, how many, and each job's last result (as health.cron). */
export const cronStatusMethod = defineMethod({
  name: "cron.status",
  scope: "read",
  params: looseEmptyParamsSchema,
  async handle({ conn, gw, reply }) {
    conn.access.requireRead(undefined);
    // only the jobs of sessions this client may see
    const visible = await visibleCron(conn, gw, await gw.cron.health());
    reply.ok({ enabled: gw.cron.enabled, ...visible });
  },
});
