import { healthParamsSchema } from "../../protocol/params.js";
import { defineMethod } from "../context.js";

export const healthMethod = defineMethod({
  name: "health",
  scope: "read",
  params: healthParamsSchema,
  async handle({ gw, reply }) {
    reply.ok(await gw.health());
  },
});
