import path from "node:path";
import { loadSkills, missingSkillEnv } from "../../prompt/skills.js";
import { ErrorCodes } from "../../protocol/frames.js";
import {
  type PluginStatusEntry,
  type PluginsListResult,
  pluginsSetEnabledParamsSchema,
  type SkillsStatusResult,
  skillsStatusParamsSchema,
  skillsUpdateParamsSchema,
  type ToggleResult,
} from "../../protocol/operator.js";
import { looseEmptyParamsSchema } from "../../protocol/params.js";
import { defineMethod, type GatewayContext } from "../context.js";
import { GatewayError } from "../errors.js";

/*
 * skills.status / skills.update and plugins.list / plugins.setEnabled (OpenClaw's names): what the console's skills
 * and plugins page lists and switches. Listing is a read; a switch is admin with a token for every session (it
 * changes what every run of the gateway may do, every tenant's). Switches are kept in <stateDir>/enabled-overrides.json (agent/enabled-overrides.ts).
 */

function agentOf(gw: GatewayContext, agentId: string | undefined): string {
  const rt = gw.service.rt;
  const id = agentId ?? rt.defaultAgentId;
  if (id !== rt.defaultAgentId && !rt.config.agents.list.some((a) => a.id === id)) {
    throw new GatewayError({ code: ErrorCodes.invalidParams, message: `params.agentId: no agent "${id}"` });
  }
  return id;
}

async function skillsOf(gw: GatewayContext, agentId: string) {
  const rt = gw.service.rt;
  const workspace = await rt.workspaceFor(agentId);
  return loadSkills([path.join(workspace.dir, "skills"), ...rt.config.skills.dirs]);
}

export const skillsStatusMethod = defineMethod({
  name: "skills.status",
  scope: "read",
  params: skillsStatusParamsSchema,
  async handle({ params, gw, conn, reply }) {
    conn.access.requireRead(undefined);
    const rt = gw.service.rt;
    const agentId = agentOf(gw, params.agentId);
    const { skills, warnings } = await skillsOf(gw, agentId);
    // switches other nodes of a fleet stored
    await rt.enabledOverrides.refresh();
    const result: SkillsStatusResult = {
      agentId,
      skills: skills.map((s) => ({
        name: s.name,
        description: s.description,
        dir: s.dir,
        enabled: rt.enabledOverrides.get("skills", s.name) !== false,
        missingEnv: missingSkillEnv(s, rt.env),
      })),
      warnings,
    };
    reply.ok(result);
  },
});

/** Writes the switch; a file that cannot be written is the gateway's trouble (unavailable), nothing changed. */
async function writeSwitch(
  gw: GatewayContext,
  kind: "skills" | "plugins",
  name: string,
  enabled: boolean,
): Promise<void> {
  try {
    await gw.service.rt.enabledOverrides.set(kind, name, enabled);
  } catch (err) {
    gw.logger.warn(`${kind} switch could not be saved`, { name, error: (err as Error).message });
    throw new GatewayError({
      code: ErrorCodes.unavailable,
      message: `the switch could not be saved (${gw.service.rt.enabledOverrides.path}): ${(err as Error).message}`,
    });
  }
}

export const skillsUpdateMethod = defineMethod({
  name: "skills.update",
  scope: "admin",
  params: skillsUpdateParamsSchema,
  async handle({ params, gw, conn, reply }) {
    conn.access.requireWholeGateway("switch skills");
    // a skill of any agent's workspace or of skills.dirs: the name must be one that exists somewhere
    const rt = gw.service.rt;
    const agents = [rt.defaultAgentId, ...rt.config.agents.list.map((a) => a.id)];
    const known = new Set<string>();
    for (const id of new Set(agents)) for (const s of (await skillsOf(gw, id)).skills) known.add(s.name);
    if (!known.has(params.skillKey)) {
      throw new GatewayError({
        code: ErrorCodes.notFound,
        message: `params.skillKey: no skill "${params.skillKey}" (see skills.status)`,
      });
    }
    await writeSwitch(gw, "skills", params.skillKey, params.enabled);
    gw.logger.info(`skill ${params.enabled ? "enabled" : "disabled"}`, { skill: params.skillKey, by: conn.actor });
    const result: ToggleResult = { ok: true, enabled: params.enabled, appliesAt: "next run" };
    reply.ok(result);
  },
});

/** Every plugin the gateway knows of: loaded, left out as disabled, or failed; with what the next start does. */
function pluginEntries(gw: GatewayContext): PluginStatusEntry[] {
  const rt = gw.service.rt;
  const report = rt.plugins ?? { loaded: [], disabled: [], failures: [] };
  const enabledNext = (id: string) =>
    rt.enabledOverrides.get("plugins", id) ?? rt.config.plugins.entries[id]?.enabled !== false;
  const out = new Map<string, PluginStatusEntry>();
  for (const id of report.loaded) out.set(id, { id, loaded: true, enabled: enabledNext(id) });
  for (const id of report.disabled) out.set(id, { id, loaded: false, enabled: enabledNext(id) });
  for (const f of report.failures) {
    const id = f.id ?? path.basename(f.path);
    out.set(id, { id, loaded: false, enabled: enabledNext(id), error: f.error });
  }
  // configured but never seen (no such folder): listed so a switch set for it is visible
  for (const id of Object.keys(rt.config.plugins.entries)) {
    if (!out.has(id)) out.set(id, { id, loaded: false, enabled: enabledNext(id), error: "not found at start" });
  }
  return [...out.values()].sort((a, b) => a.id.localeCompare(b.id));
}

export const pluginsListMethod = defineMethod({
  name: "plugins.list",
  scope: "read",
  params: looseEmptyParamsSchema,
  async handle({ gw, conn, reply }) {
    conn.access.requireRead(undefined);
    await gw.service.rt.init();
    await gw.service.rt.enabledOverrides.refresh();
    const result: PluginsListResult = { plugins: pluginEntries(gw) };
    reply.ok(result);
  },
});

export const pluginsSetEnabledMethod = defineMethod({
  name: "plugins.setEnabled",
  scope: "admin",
  params: pluginsSetEnabledParamsSchema,
  async handle({ params, gw, conn, reply }) {
    conn.access.requireWholeGateway("switch plugins");
    await gw.service.rt.init();
    if (!pluginEntries(gw).some((p) => p.id === params.pluginId)) {
      throw new GatewayError({
        code: ErrorCodes.notFound,
        message: `params.pluginId: no plugin "${params.pluginId}" (see plugins.list)`,
      });
    }
    await writeSwitch(gw, "plugins", params.pluginId, params.enabled);
    gw.logger.info(`plugin ${params.enabled ? "enabled" : "disabled"} from the next start`, {
      plugin: params.pluginId,
      by: conn.actor,
    });
    const result: ToggleResult = { ok: true, enabled: params.enabled, appliesAt: "next start" };
    reply.ok(result);
  },
});
