import { mkdir, readdir, realpath, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";
import type { LoopgateConfig } from "../config/schema.js";

/** The agent that owns the shared default workspace; every other agent gets its own directory. */
export const MAIN_AGENT_ID = "main";

export interface ResolveWorkspaceInput {
  agentId: string;
  /** `agents.list[].workspace` for this agent. */
  agentWorkspace?: string;
  /** `agents.defaults.workspace`. */
  defaultWorkspace?: string;
  /** `$LOOPGATE_STATE_DIR`, already resolved by the config layer (a leading `~` is still expanded here). */
  stateDir: string;
  /** When set, the run is redirected into `<sandboxRoot>/<agentId>` instead of the host workspace. */
  sandboxRoot?: string;
  /** Injected so tests do not depend on the real home directory. */
  homeDir?: string;
}

// Agent ids become directory names, so anything that could climb out of the parent (`..`, separators) or
// collide on case-insensitive file systems in surprising ways is refused with a message naming the id.
const AGENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export function expandHome(p: string, homeDir: string = homedir()): string {
  if (p === "~") return homeDir;
  if (p.startsWith("~/") || p.startsWith(`~${path.sep}`)) return path.join(homeDir, p.slice(2));
  return p;
}

function toAbsolute(p: string, homeDir: string): string {
  return path.resolve(expandHome(p.trim(), homeDir));
}

function nonBlank(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== "";
}

/** The workspace dir `agentId` has under `config` (its own setting, the default, or one per agent): not created. */
export function agentWorkspaceDir(
  config: Pick<LoopgateConfig, "agents">,
  stateDir: string,
  agentId: string,
  sandboxRoot?: string,
): string {
  const entry = config.agents.list.find((a) => a.id === agentId);
  return resolveWorkspaceDir({
    agentId,
    agentWorkspace: entry?.workspace,
    defaultWorkspace: config.agents.defaults.workspace,
    stateDir,
    sandboxRoot: sandboxRoot ?? config.agents.defaults.sandbox.workspaceRoot,
  });
}

/**
 * Precedence: the agent's own `workspace` > `agents.defaults.workspace` > `<stateDir>/workspace`.
 *
 * The defaults and the `<stateDir>/workspace` fallback belong to the main agent only. A second agent without its
 * own setting gets `<stateDir>/workspace-<agentId>`: sharing one directory would make both agents read the same
 * SOUL.md/IDENTITY.md/MEMORY.md, so they would silently merge personalities and memories.
 */
export function resolveWorkspaceDir(input: ResolveWorkspaceInput): string {
  const { agentId } = input;
  if (!AGENT_ID_PATTERN.test(agentId)) {
    throw new Error(
      `invalid agent id ${JSON.stringify(agentId)}: use letters, digits, "-" or "_" (max 64 chars), ` +
        "because it becomes a directory name",
    );
  }
  const home = input.homeDir ?? homedir();
  if (nonBlank(input.sandboxRoot)) {
    // Sandboxed runs never touch the host workspace; each agent gets its own folder under the sandbox root.
    return path.join(toAbsolute(input.sandboxRoot, home), agentId);
  }
  if (nonBlank(input.agentWorkspace)) return toAbsolute(input.agentWorkspace, home);
  const stateDir = toAbsolute(input.stateDir, home);
  if (agentId !== MAIN_AGENT_ID) return path.join(stateDir, `workspace-${agentId}`);
  if (nonBlank(input.defaultWorkspace)) return toAbsolute(input.defaultWorkspace, home);
  return path.join(stateDir, "workspace");
}

/**
 * Starter files for a brand-new workspace. They are deliberately short: every byte here is sent with every
 * turn until the user edits them, so they say what each file is for and leave the rest to the user and agent.
 */
export const STARTER_FILES: Readonly<Record<string, string>> = {
  "AGENTS.md": `# How to work here

- This folder is your workspace and your memory. Files here are loaded into your context every run.
- Write down what should survive a restart: lasting facts in MEMORY.md, notes about the user in USER.md.
- Prefer small, reversible steps. Say what you changed.
- Ask before anything destructive or anything that speaks for the user to other people.
`,
  "SOUL.md": `# Soul

Be genuinely helpful, direct and honest. Skip filler. Have opinions, and say when you are unsure.
Respect the user's time and privacy. Edit this file as you learn who you want to be.
`,
  "TOOLS.md": `# Tool notes

Local notes about this machine and its tools (hosts, paths, preferred commands). Tools themselves are
described by the runtime; keep only what is specific to this setup here.
`,
  "IDENTITY.md": `# Identity

- Name: (not chosen yet)
- Emoji: (none yet)
- Vibe: (to be decided with the user)
`,
  "USER.md": `# User

- Name:
- How to address them:
- Timezone:
- Notes:
`,
  "HEARTBEAT.md": `# Heartbeat

Checks to run on a heartbeat poll, one per line. While this list is empty, answer heartbeats with NO_REPLY.
`,
  "BOOTSTRAP.md": `# First run

This workspace was just created, so this is your first conversation. Greet the user, then together settle
your name, emoji and vibe (write them to IDENTITY.md) and learn about them (write to USER.md).
When that is done, delete this file: it only exists for the first run.
`,
};

export interface EnsureWorkspaceResult {
  /** Real path (symlinks resolved), the one file tools must be confined to. */
  dir: string;
  /** True when the workspace was brand-new and received the starter files. */
  created: boolean;
}

async function isMissingOrEmpty(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw err;
  }
}

/**
 * Creates the workspace directory. Only a brand-new workspace (missing, or an empty directory someone created
 * ahead of time) gets the starter files: seeding an existing workspace would resurrect a BOOTSTRAP.md the agent
 * deliberately deleted, or fill a real project folder with files it never asked for.
 */
export async function ensureWorkspace(dir: string): Promise<EnsureWorkspaceResult> {
  const absolute = path.resolve(expandHome(dir));
  const brandNew = await isMissingOrEmpty(absolute);
  await mkdir(absolute, { recursive: true });
  if (brandNew) {
    for (const [name, text] of Object.entries(STARTER_FILES)) {
      try {
        // `wx` fails instead of overwriting, which also makes two first runs racing on one workspace harmless.
        await writeFile(path.join(absolute, name), text, { flag: "wx" });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
    }
  }
  return { dir: await realpath(absolute), created: brandNew };
}
