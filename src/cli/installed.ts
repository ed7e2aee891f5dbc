import fs from "node:fs";
import path from "node:path";
import { defaultAgentId } from "../config/agents.js";
import { type LoadedConfig, loadConfig } from "../config/index.js";
import { agentWorkspaceDir } from "../prompt/workspace.js";
import { requireConfiguredAgent } from "./agent.js";
import { CliError, EXIT } from "./exit-codes.js";

export interface InstalledOptions {
  config?: string;
  agent?: string;
  json?: boolean;
}

type Kind = "skill" | "plugin";

/**
 * Where `skills install` / `plugins install` put material (cli/install.ts): skills in the agent's workspace under
 * skills/<name>, plugins in <stateDir>/plugins/<name>. Computed without creating the workspace: listing changes
 * nothing.
 */
function installRoot(kind: Kind, loaded: LoadedConfig, agent: string | undefined): string {
  if (kind === "plugin") return path.join(loaded.stateDir, "plugins");
  const agentId = agent ?? defaultAgentId(loaded.config);
  return path.join(agentWorkspaceDir(loaded.config, loaded.stateDir, agentId), "skills");
}

function load(kind: Kind, opts: InstalledOptions): { loaded: LoadedConfig; root: string } {
  const loaded = loadConfig({ configPath: opts.config });
  if (kind === "skill") requireConfiguredAgent(loaded.config, opts.agent, "--agent");
  return { loaded, root: installRoot(kind, loaded, opts.agent) };
}

interface Installed {
  name: string;
  path: string;
  /** plugins only: false when plugins.entries.<name>.enabled is false (installed, but not loaded) */
  enabled?: boolean;
}

/** `loopgate skills list` / `plugins list`: each installed one's name, path and (plugins) whether it loads. */
export async function runInstalledList(kind: Kind, opts: InstalledOptions): Promise<number> {
  const { loaded, root } = load(kind, opts);
  const names = fs.existsSync(root)
    ? fs
        .readdirSync(root, { withFileTypes: true })
        .filter((d) => d.isDirectory() && !d.name.startsWith("."))
        .map((d) => d.name)
        .sort()
    : [];
  const entries = loaded.config.plugins.entries;
  const items: Installed[] = names.map((name) => ({
    name,
    path: path.join(root, name),
    ...(kind === "plugin" ? { enabled: entries[name]?.enabled !== false } : {}),
  }));
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(items, null, 2)}\n`);
    return EXIT.ok;
  }
  if (items.length === 0) {
    process.stdout.write(`no ${kind}s installed in ${root} (install one with: loopgate ${kind}s install <source>)\n`);
    return EXIT.ok;
  }
  for (const it of items) {
    const state = it.enabled === undefined ? "" : it.enabled ? "  enabled" : "  disabled (plugins.entries)";
    process.stdout.write(`${it.name}  ${it.path}${state}\n`);
  }
  return EXIT.ok;
}

/**
 * `loopgate skills remove <name>` / `plugins remove <name>`: deletes what install put there. Only a direct child
 * of the install folder, by its plain name, so a name cannot reach outside it. The config is not edited: a
 * plugins.entries.<name> block stays for a later reinstall, and the output says so.
 */
export async function runInstalledRemove(kind: Kind, name: string, opts: InstalledOptions): Promise<number> {
  const { loaded, root } = load(kind, opts);
  if (!/^[A-Za-z0-9@][A-Za-z0-9._-]*$/.test(name) || name === "." || name === "..") {
    throw new CliError(`${kind}s remove: "${name}" is not an installed ${kind}'s name (see: loopgate ${kind}s list)`);
  }
  const dir = path.join(root, name);
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new CliError(`no ${kind} "${name}" installed in ${root} (see: loopgate ${kind}s list)`, EXIT.runError);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`removed ${kind} ${name} (${dir})\n`);
  if (kind === "plugin" && loaded.config.plugins.entries[name]) {
    process.stdout.write(
      `plugins.entries.${name} stays in ${loaded.file ?? "the config"}; remove it there if unwanted\n`,
    );
  }
  if (kind === "plugin") process.stdout.write("a running gateway keeps it loaded until it restarts\n");
  return EXIT.ok;
}
