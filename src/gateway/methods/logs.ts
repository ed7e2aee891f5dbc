import { gatewayLogPath } from "../../infra/gateway-log-path.js";
import { logsTailParamsSchema } from "../../protocol/operator.js";
import { defineMethod } from "../context.js";
import { tailLog } from "../log-tail.js";

/**
 * logs.tail (OpenClaw's name): the gateway log (<stateDir>/logs/gateway.log, written by `loopgate gateway`) from a
 * cursor, so a client tails it live by asking again with the cursor it got. Admin: a log names sessions, clients
 * and errors of every tenant.
 */
export const logsTailMethod = defineMethod({
  name: "logs.tail",
  scope: "admin",
  params: logsTailParamsSchema,
  async handle({ params, gw, conn, reply }) {
    conn.access.requireWholeGateway("read the gateway log");
    reply.ok(await tailLog(gatewayLogPath(gw.service.rt.stateDir), params));
  },
});
