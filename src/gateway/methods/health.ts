import { healthParamsSchema } from "../../protocol/params.js";
import { defineMethod } from "../context.js";

export const healthMethod = defineMethod({
  name: "health",
  scope: "read",
  params: healthParamsSchema,
  handle({ gw, reply }) {
    reply.ok(gw.health());
  },
});
