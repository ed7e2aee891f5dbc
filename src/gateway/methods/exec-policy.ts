import { createHash } from "node:crypto";
import fs from "node:fs";
import { z } from "zod";
import { execAllowlist } from "../../config/schema.js";
import { ErrorCodes } from "../../protocol/frames.js";
import type { ExecApprovalsGetResult } from "../../protocol/operator.js";
import { looseEmptyParamsSchema } from "../../protocol/params.js";
import { defineMethod, type GatewayContext } from "../context.js";
import { GatewayError } from "../errors.js";

/*
 * exec.approvals.get / exec.approvals.set (OpenClaw's names, admin like OpenClaw's): the exec policy an operator may
 * edit without a restart, i.e. the allowlist patterns in <stateDir>/exec-approvals.json, added to the config's
 * tools.exec.allowlist (shown beside them, read-only: the config is read once at start). A set is checked with the
 * config's own allowlist schema, so the console refuses exactly what the config file would, at the same path shape
 * (params.file.allowlist[1]: …). `baseHash` guards against two operators overwriting each other.
 */

function current(gw: GatewayContext): ExecApprovalsGetResult {
  const approvals = gw.service.rt.execApprovals;
  const { path, file } = approvals.file();
  const policy = approvals.policy;
  return {
    path,
    exists: fs.existsSync(path),
    hash: createHash("sha256").update(JSON.stringify(file)).digest("hex"),
    file,
    config: { security: policy.security, ask: policy.ask, allowlist: [...policy.allowlist] },
  };
}

export const execApprovalsGetMethod = defineMethod({
  name: "exec.approvals.get",
  scope: "admin",
  params: looseEmptyParamsSchema,
  async handle({ gw, conn, reply }) {
    // allow-always answers of every tenant are listed
    conn.access.requireWholeGateway("read the exec policy");
    await gw.service.rt.execApprovals.refresh();
    reply.ok(current(gw));
  },
});

export const execApprovalsSetParamsSchema = z.strictObject({
  // OpenClaw sends its whole file; Loopgate takes its allowlist and keeps the rest (allow-always answers) as it is
  file: z.looseObject({ allowlist: execAllowlist }),
  baseHash: z.string().min(1).optional(),
});

export const execApprovalsSetMethod = defineMethod({
  name: "exec.approvals.set",
  scope: "admin",
  params: execApprovalsSetParamsSchema,
  async handle({ params, gw, conn, reply }) {
    conn.access.requireWholeGateway("change the exec allowlist");
    await gw.service.rt.execApprovals.refresh();
    const before = current(gw);
    if (params.baseHash !== undefined && params.baseHash !== before.hash) {
      throw new GatewayError({
        code: ErrorCodes.conflict,
        message: "params.baseHash: exec-approvals.json changed since it was read; read it again (exec.approvals.get)",
      });
    }
    try {
      await gw.service.rt.execApprovals.setAllowlist(params.file.allowlist);
    } catch (err) {
      throw new GatewayError({
        code: ErrorCodes.unavailable,
        message: `the exec allowlist could not be saved (${before.path}): ${(err as Error).message}`,
      });
    }
    gw.logger.info("exec allowlist changed", { patterns: params.file.allowlist.length, by: conn.actor });
    reply.ok(current(gw));
  },
});
