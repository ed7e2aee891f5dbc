import { defaultAbortMs } from "../../diagnostics/classify.js";
import type { DiagnosticsListResult } from "../../protocol/diagnostics.js";
import { diagnosticsListParamsSchema } from "../../protocol/params.js";
import { defineMethod } from "../context.js";

/**
 * diagnostics.list: the current classification of every busy session and the recent diagnostics, only of the
 * sessions the caller may see (operator.read inside its token's sessions, SPEC 21). Off, the lists are empty.
 */
export const diagnosticsListMethod = defineMethod({
  name: "diagnostics.list",
  scope: "read",
  params: diagnosticsListParamsSchema,
  handle({ params, conn, gw, reply }) {
    const only = conn.access.readFilter(params.sessionKey, gw.service.rt.defaultAgentId);
    const cfg = gw.service.rt.config.diagnostics;
    const { sessions, recent } = gw.diagnostics?.list() ?? { sessions: [], recent: [] };
    const visible = (key: string) => conn.access.canSeeSession(key) && (only === undefined || key === only);
    const result: DiagnosticsListResult = {
      enabled: gw.diagnostics !== undefined,
      stuckSessionWarnMs: cfg.stuckSessionWarnMs,
      stuckSessionAbortMs: cfg.stuckSessionAbortMs ?? defaultAbortMs(cfg.stuckSessionWarnMs),
      sessions: sessions.filter((d) => visible(d.sessionKey)),
      recent: recent.filter((d) => visible(d.sessionKey)),
    };
    reply.ok(result);
  },
});
