import { loadConfig } from "../config/index.js";
import { systemClock } from "../infra/clock.js";
import { createLogger } from "../infra/logger.js";
import { normalizeSessionKey } from "../session/keys.js";
import { explainSandbox, formatExplanation } from "../tools/sandbox/explain.js";
import { Sandboxes } from "../tools/sandbox/sandboxes.js";
import { EXIT } from "./exit-codes.js";

export interface SandboxCliOptions {
  config?: string;
  agent?: string;
  session?: string;
  json?: boolean;
  all?: boolean;
}

/** The sandboxes of the state dir the config names (they live under <stateDir>/sandboxes, one dir per scope). */
function sandboxesOf(opts: SandboxCliOptions) {
  const loaded = loadConfig({ configPath: opts.config });
  const sandboxes = new Sandboxes({
    config: loaded.config,
    stateDir: loaded.stateDir,
    env: process.env,
    clock: systemClock,
    logger: createLogger(),
  });
  return { loaded, sandboxes };
}

/** `loopgate sandbox list`: every scope with a sandbox, its backend, agent, session and last use. */
export async function runSandboxList(opts: SandboxCliOptions): Promise<number> {
  const { sandboxes } = sandboxesOf(opts);
  const entries = await sandboxes.list();
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ sandboxes: entries }, null, 2)}\n`);
    return EXIT.ok;
  }
  if (entries.length === 0) {
    process.stdout.write(`no sandboxes under ${sandboxes.root}\n`);
    return EXIT.ok;
  }
  for (const e of entries) {
    const who = e.sessionKey ? `session ${e.sessionKey}` : e.scope === "agent" ? `agent ${e.agentId}` : "shared";
    process.stdout.write(
      `${e.scopeKey}  ${e.backend}  ${who}  last used ${new Date(e.lastUsedAtMs).toISOString()}\n  ${e.dir}\n`,
    );
  }
  return EXIT.ok;
}

/** `loopgate sandbox explain [--agent] [--session]`: whether that session's runs are sandboxed, how, and exec's policy. */
export async function runSandboxExplain(opts: SandboxCliOptions): Promise<number> {
  const { loaded, sandboxes } = sandboxesOf(opts);
  const { defaultAgentId } = await import("../config/agents.js");
  const parsed = normalizeSessionKey(opts.session, opts.agent ?? defaultAgentId(loaded.config));
  const agentId = opts.agent ?? parsed.agentId;
  const exec = loaded.config.tools.exec;
  const explanation = explainSandbox(
    loaded.config,
    {
      agentId,
      sessionKey: parsed.key,
      scopeKey: (s) => sandboxes.scopeKey(s, agentId, parsed.key),
      root: sandboxes.root,
    },
    // the gateway's policy (the CLI's --local runs default to "full")
    { security: exec.security ?? "allowlist", ask: exec.ask, allowlist: exec.allowlist },
  );
  process.stdout.write(`${opts.json ? JSON.stringify(explanation, null, 2) : formatExplanation(explanation)}\n`);
  return EXIT.ok;
}

/** `loopgate sandbox recreate --all | --agent | --session`: removes scopes; their next run starts a fresh sandbox. */
export async function runSandboxRecreate(opts: SandboxCliOptions): Promise<number> {
  const { sandboxes } = sandboxesOf(opts);
  if (!opts.all && opts.agent === undefined && opts.session === undefined) {
    process.stderr.write("loopgate: sandbox recreate: say which: --all, --agent <id> or --session <key>\n");
    return EXIT.usage;
  }
  const sessionKey = opts.session !== undefined ? normalizeSessionKey(opts.session, opts.agent).key : undefined;
  const removed = await sandboxes.recreate({ agentId: opts.agent, sessionKey });
  process.stdout.write(
    removed.length === 0
      ? "no sandbox matched; nothing removed\n"
      : `removed ${removed.join(", ")}: the next run of each starts a fresh sandbox\n`,
  );
  return EXIT.ok;
}
