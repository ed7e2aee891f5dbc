import { existsSync } from "node:fs";
import path from "node:path";
import { loadConfig } from "../config/index.js";
import { installMaterial } from "../hooks/install.js";
import type { HookLogger } from "../hooks/logger.js";
import { createLogger } from "../infra/logger.js";
import { composeNode } from "../node/compose.js";
import { requireConfiguredAgent } from "./agent.js";
import { CliError, EXIT } from "./exit-codes.js";

/** An existing path, or one written as a path (./, ../, /, ~), is a directory source; anything else an npm spec. */
function isPathSource(source: string): boolean {
  return existsSync(source) || /^(\.{1,2}([\\/]|$)|[\\/]|~)/.test(source);
}

/**
 * `loopgate skills install` / `loopgate plugins install`: stage → security.installPolicy → before_install hooks →
 * move into place. A blocked install leaves nothing behind; findings are printed either way.
 */
export async function runInstall(
  kind: "skill" | "plugin",
  source: string,
  opts: { config?: string; update?: boolean; agent?: string },
): Promise<number> {
  const pathSource = isPathSource(source);
  // A typo'd path is the user's mistake, not a refused install: usage error, before config or plugins load.
  if (pathSource && !existsSync(source)) {
    throw new CliError(`${kind}s install: no such directory: ${source}`, EXIT.usage);
  }
  const loaded = loadConfig({ configPath: opts.config });
  if (kind === "skill") requireConfiguredAgent(loaded.config, opts.agent, "--agent");
  // the runtime only for its plugin hooks (before_install) and the agent's workspace: no run starts here
  const node = await composeNode({
    role: "command",
    config: loaded.config,
    stateDir: loaded.stateDir,
    logger: createLogger(),
  });
  try {
    const rt = node.runtime;
    await rt.init();
    const destRoot =
      kind === "skill"
        ? path.join((await rt.workspaceFor(opts.agent ?? rt.defaultAgentId)).dir, "skills")
        : path.join(loaded.stateDir, "plugins");
    // The outcome is printed below, once; the installer's own lines about it would repeat it.
    const errorsOnly: HookLogger = { info() {}, warn() {}, error: (m) => rt.hookLogger.error(m) };
    const result = await installMaterial({
      kind,
      source: pathSource ? path.resolve(source) : source,
      destRoot,
      policy: loaded.config.security.installPolicy,
      runner: rt.pluginHooks,
      mode: opts.update ? "update" : "install",
      logger: errorsOnly,
    });
    for (const f of result.findings) {
      process.stderr.write(
        `finding${f.severity ? ` [${f.severity}]` : ""}${f.pluginId ? ` (${f.pluginId})` : ""}: ${f.message}${f.file ? ` — ${f.file}` : ""}\n`,
      );
    }
    if (!result.ok) throw new CliError(`${kind} install blocked: ${result.reason}`, 1);
    process.stdout.write(`${opts.update ? "updated" : "installed"} ${kind} ${result.name} → ${result.path}\n`);
    return 0;
  } finally {
    await node.close();
  }
}
