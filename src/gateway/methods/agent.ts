import { agentParamsSchema, agentWaitParamsSchema } from "../../protocol/params.js";
import { defineMethod } from "../context.js";
import { acceptRun } from "./run-intake.js";

/** Default `agent.wait` window (SPEC 13); waiting never stops the run. */
export const DEFAULT_WAIT_MS = 30_000;

export const agentMethod = defineMethod({
  name: "agent",
  scope: "write",
  params: agentParamsSchema,
  async handle({ params, conn, gw, reply }) {
    // runId = idempotencyKey: a repeated key gets the existing run's accepted frame and final, never a new run.
    const accepted = await acceptRun(gw, conn, params, reply);
    reply.ok(await gw.service.final(accepted.runId));
  },
});

export const agentWaitMethod = defineMethod({
  name: "agent.wait",
  // operator.read waits for any visible run, operator.write for its own (access.ts)
  scope: "read",
  params: agentWaitParamsSchema,
  async handle({ params, conn, gw, reply }) {
    conn.access.requireRunVisible(params.runId, (await gw.service.sessions.run(params.runId))?.sessionKey);
    reply.ok(await gw.service.wait(params.runId, params.timeoutMs ?? DEFAULT_WAIT_MS));
  },
});
