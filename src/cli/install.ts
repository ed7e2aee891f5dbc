import { existsSync } from "node:fs";
import path from "node:path";
import { AgentRuntime } from "../agent/runtime.js";
import { loadConfig } from "../config/index.js";
import { installMaterial } from "../hooks/install.js";
import { createLogger } from "../infra/logger.js";
import { openStore } from "../storage/sqlite-store.js";
import { requireConfiguredAgent } from "./agent.js";
import { CliError } from "./exit-codes.js";

/**
 * `loopgate skills install` / `loopgate plugins install`: stage → security.installPolicy → before_install hooks →
 * move into place. A blocked install leaves nothing behind; findings are printed either way.
 */
export async function runInstall(
  kind: "skill" | "plugin",
  source: string,
  opts: { config?: string; update?: boolean; agent?: string },
): Promise<number> {
  const loaded = loadConfig({ configPath: opts.config });
  if (kind === "skill") requireConfiguredAgent(loaded.config, opts.agent, "--agent");
  const store = openStore(loaded.stateDir);
  try {
    const rt = new AgentRuntime({ config: loaded.config, stateDir: loaded.stateDir, store, logger: createLogger() });
    await rt.init();
    const destRoot =
      kind === "skill"
        ? path.join((await rt.workspaceFor(opts.agent ?? rt.defaultAgentId)).dir, "skills")
        : path.join(loaded.stateDir, "plugins");
    // An existing path (with or without ./) is a directory source; anything else is an npm spec.
    const looksLikeDir = existsSync(source) || source.startsWith(".") || source.startsWith("/");
    const result = await installMaterial({
      kind,
      source: looksLikeDir ? path.resolve(source) : source,
      destRoot,
      policy: loaded.config.security.installPolicy,
      runner: rt.pluginHooks,
      mode: opts.update ? "update" : "install",
      logger: rt.hookLogger,
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
    store.close();
  }
}
