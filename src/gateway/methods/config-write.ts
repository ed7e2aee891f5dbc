import { ErrorCodes } from "../../protocol/frames.js";
import { configApplyParamsSchema, configPatchParamsSchema } from "../../protocol/params.js";
import type { ConfigWriteResult } from "../../protocol/payloads.js";
import { type ConfigWrite, ConfigWriteError } from "../config-reload.js";
import { type CallerConnection, defineMethod, type GatewayContext } from "../context.js";
import { GatewayError } from "../errors.js";
import { redactConfig } from "../redact-config.js";

/*
 * config.patch and config.apply (OpenClaw's names, SPEC 26): an operator's write of the gateway's config file,
 * validated with the start's loader before it is written, then applied like a reload. Admin scope, and a token that
 * grants every session: the config serves them all.
 */

async function writeConfig(
  gw: GatewayContext,
  conn: CallerConnection,
  req: Omit<ConfigWrite, "by">,
): Promise<ConfigWriteResult> {
  if (!conn.access.seesAllSessions) {
    throw new GatewayError({
      code: ErrorCodes.forbidden,
      message: "config writes change every session's config: they need a token that grants all sessions",
    });
  }
  const file = gw.configFile;
  if (!file) {
    throw new GatewayError({
      code: ErrorCodes.unavailable,
      message: "this gateway was not started from a config file it may write (GatewayOptions.configFile)",
    });
  }
  try {
    const { hash, change } = await file.write({ ...req, by: conn.actor });
    return {
      ok: true,
      path: file.file,
      hash,
      changedPaths: change.applied,
      restartRequired: change.restart,
      config: redactConfig(gw.service.rt.config).config,
    };
  } catch (err) {
    if (!(err instanceof ConfigWriteError)) throw err;
    throw new GatewayError({ code: err.code, message: err.message });
  }
}

export const configPatchMethod = defineMethod({
  name: "config.patch",
  scope: "admin",
  params: configPatchParamsSchema,
  async handle({ params, conn, gw, reply }) {
    reply.ok(
      await writeConfig(gw, conn, {
        kind: "patch",
        raw: params.raw,
        ...(params.baseHash !== undefined ? { baseHash: params.baseHash } : {}),
        ...(params.replacePaths ? { replacePaths: params.replacePaths } : {}),
        ...(params.note !== undefined ? { note: params.note } : {}),
      }),
    );
  },
});

export const configApplyMethod = defineMethod({
  name: "config.apply",
  scope: "admin",
  params: configApplyParamsSchema,
  async handle({ params, conn, gw, reply }) {
    reply.ok(
      await writeConfig(gw, conn, {
        kind: "replace",
        raw: params.raw,
        ...(params.baseHash !== undefined ? { baseHash: params.baseHash } : {}),
        ...(params.note !== undefined ? { note: params.note } : {}),
      }),
    );
  },
});
