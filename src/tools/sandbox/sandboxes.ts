import { createHash } from "node:crypto";
import { existsSync, realpathSync } from "node:fs";
import { mkdir, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { configuredAgentIds } from "../../config/agents.js";
import type { LoopgateConfig } from "../../config/schema.js";
import type { Clock } from "../../infra/clock.js";
import type { Logger } from "../../infra/logger.js";
import { expandHome } from "../../prompt/workspace.js";
import { isInside } from "../workspace-path.js";
import { BubblewrapBackend } from "./bubblewrap.js";
import { DockerBackend } from "./docker.js";
import {
  decideSandbox,
  parseBind,
  type SandboxBackendKind,
  type SandboxBind,
  type SandboxDecision,
  type SandboxSettings,
  sandboxSettings,
} from "./settings.js";
import { type RunSandbox, type Sandbox, type SandboxBackend, SandboxUnavailableError } from "./types.js";

export interface SandboxesOptions {
  config: LoopgateConfig;
  stateDir: string;
  env: NodeJS.ProcessEnv;
  clock: Clock;
  logger?: Logger;
  /** backends by kind; default: the real bubblewrap and docker ones */
  backends?: Partial<Record<SandboxBackendKind, SandboxBackend>>;
}

/** What `sessions.list` shows of a session's sandbox. */
export interface SessionSandboxInfo {
  backend: SandboxBackendKind;
  scope: SandboxSettings["scope"];
  workspaceAccess: SandboxSettings["workspaceAccess"];
  network: SandboxSettings["network"];
  scopeKey: string;
  /** the scope's dir under the state dir */
  dir: string;
}

/** A scope that has (or had) a sandbox: `sandbox list`. */
export interface SandboxScopeEntry {
  scopeKey: string;
  backend: SandboxBackendKind;
  scope: SandboxSettings["scope"];
  agentId: string;
  sessionKey?: string;
  dir: string;
  createdAtMs: number;
  lastUsedAtMs: number;
}

interface OpenScope {
  sandbox: Sandbox;
  backend: SandboxBackend;
  lastUsedMs: number;
  idleMs: number;
}

/** How often idle containers are looked for. */
const PRUNE_EVERY_MS = 60_000;

/**
 * The sandboxes of one process: which session is sandboxed and why (config only), its scope's sandbox made on the
 * first run that needs it (a dir under `<stateDir>/sandboxes/<scopeKey>`, and for docker a container), the scope
 * ended by a /new or /reset of a `scope: "session"` session, idle containers removed, `sandbox list | recreate`.
 */
export class Sandboxes {
  private readonly backends: Partial<Record<SandboxBackendKind, SandboxBackend>>;
  private readonly open = new Map<string, OpenScope>();
  private readonly opening = new Map<string, Promise<Sandbox>>();
  private pruneTimer: unknown;
  readonly root: string;

  constructor(private opts: SandboxesOptions) {
    this.backends = opts.backends ?? {};
    this.root = path.join(opts.stateDir, "sandboxes");
  }

  /**
   * A reloaded config (SPEC 26): which sessions are sandboxed and how is decided by it from the next run; sandboxes
   * already open keep running until their scope ends. Check it first (`checkConfig`).
   */
  reconfigure(config: LoopgateConfig): void {
    this.opts = { ...this.opts, config };
  }

  /** The load-time check for a config that is not applied yet (a reload's candidate). */
  checkConfig(config: LoopgateConfig): Promise<void> {
    return new Sandboxes({ ...this.opts, config }).check();
  }

  /**
   * The load-time check: every agent whose mode is not off gets a backend that can run here and limits it can
   * enforce; the first problem is thrown, naming its key.
   */
  async check(): Promise<void> {
    const checked = new Set<SandboxBackendKind>();
    for (const agentId of this.agentIds()) {
      const s = sandboxSettings(this.opts.config, agentId);
      if (s.mode === "off") continue;
      if (s.backend === "bubblewrap") {
        for (const key of ["pids", "cpus"] as const) {
          if (s[key] !== undefined) {
            throw new SandboxUnavailableError(
              `${s.keyPath(key)}: the bubblewrap backend cannot enforce it (it needs cgroups, which bwrap has not); remove it or use backend "docker"`,
            );
          }
        }
      }
      for (const [i, bind] of s.binds.entries()) {
        const host = expandHome(parseBind(bind).host);
        if (!existsSync(host)) throw new SandboxUnavailableError(`${s.keyPath("binds")}[${i}]: ${host} does not exist`);
        const real = realpathSync(host);
        const stateDir = realOrSelf(this.opts.stateDir);
        if (isInside(real, stateDir) || isInside(stateDir, real)) {
          throw new SandboxUnavailableError(
            `${s.keyPath("binds")}[${i}]: ${host} holds the state dir or is inside it (sessions, tokens, provider keys): a sandbox must never see it`,
          );
        }
      }
      if (checked.has(s.backend)) continue;
      checked.add(s.backend);
      try {
        await this.backend(s.backend).check();
      } catch (err) {
        throw new SandboxUnavailableError(`${s.keyPath("backend")} "${s.backend}": ${(err as Error).message}`);
      }
    }
  }

  /** Whether the session's runs are sandboxed, and why (or why not). */
  decide(agentId: string, sessionKey: string): SandboxDecision & { settings: SandboxSettings } {
    const settings = sandboxSettings(this.opts.config, agentId);
    return { ...decideSandbox(settings, agentId, sessionKey), settings };
  }

  /** The scope a session's sandbox belongs to: its own, its agent's, or the one shared by all. */
  scopeKey(settings: SandboxSettings, agentId: string, sessionKey: string): string {
    if (settings.scope === "shared") return "shared";
    if (settings.scope === "agent") return `agent-${agentId}`;
    return `session-${agentId}-${createHash("sha256").update(sessionKey).digest("hex").slice(0, 16)}`;
  }

  /** `sessions.list`'s field: null when the session's runs are not sandboxed. */
  describeSession(agentId: string, sessionKey: string): SessionSandboxInfo | null {
    const d = this.decide(agentId, sessionKey);
    if (!d.sandboxed) return null;
    const scopeKey = this.scopeKey(d.settings, agentId, sessionKey);
    const { backend, scope, workspaceAccess, network } = d.settings;
    return { backend, scope, workspaceAccess, network, scopeKey, dir: path.join(this.root, scopeKey) };
  }

  /** The run's sandbox (made on first use), or undefined when the session is not sandboxed. */
  async forRun(agentId: string, sessionKey: string, agentWorkspaceDir: string): Promise<RunSandbox | undefined> {
    const d = this.decide(agentId, sessionKey);
    if (!d.sandboxed) return undefined;
    const s = d.settings;
    const scopeKey = this.scopeKey(s, agentId, sessionKey);
    let pending = this.opening.get(scopeKey);
    if (!pending) {
      pending = this.openScope(scopeKey, s, agentId, sessionKey, agentWorkspaceDir);
      this.opening.set(scopeKey, pending);
      pending.catch(() => {}).finally(() => this.opening.delete(scopeKey));
    }
    const sandbox = await pending;
    await this.touch(scopeKey);
    return {
      sandbox,
      scope: s.scope,
      workspaceAccess: s.workspaceAccess,
      network: s.network,
      why: d.why,
      env: s.env,
      ...(s.timeoutSeconds !== undefined ? { timeoutSeconds: s.timeoutSeconds } : {}),
    };
  }

  /** Ends a `scope: "session"` sandbox after /new, /reset or a deletion: its dir and container go, the next run starts fresh. */
  async sessionEnded(agentId: string, sessionKey: string): Promise<void> {
    const d = this.decide(agentId, sessionKey);
    if (d.settings.scope !== "session") return;
    await this.removeScope(this.scopeKey(d.settings, agentId, sessionKey), d.settings.backend);
  }

  /** Every scope that has a dir, newest use first. */
  async list(): Promise<SandboxScopeEntry[]> {
    const names = await readdir(this.root).catch(() => [] as string[]);
    const entries: SandboxScopeEntry[] = [];
    for (const name of names) {
      const meta = await readScopeMeta(path.join(this.root, name));
      if (meta) entries.push({ ...meta, dir: path.join(this.root, name) });
    }
    return entries.sort((a, b) => b.lastUsedAtMs - a.lastUsedAtMs);
  }

  /**
   * Removes scopes so their next run starts fresh (`sandbox recreate`): those of one agent, of one session, or all.
   * Returns the scope keys removed.
   */
  async recreate(filter: { agentId?: string; sessionKey?: string }): Promise<string[]> {
    const removed: string[] = [];
    for (const e of await this.list()) {
      if (filter.agentId !== undefined && e.agentId !== filter.agentId) continue;
      // an agent's or the shared scope serves other sessions too: a session filter leaves them
      if (filter.sessionKey !== undefined && (e.scope !== "session" || e.sessionKey !== filter.sessionKey)) continue;
      await this.removeScope(e.scopeKey, e.backend);
      removed.push(e.scopeKey);
    }
    return removed;
  }

  close(): void {
    if (this.pruneTimer !== undefined) this.opts.clock.clearTimeout(this.pruneTimer);
    this.pruneTimer = undefined;
  }

  private async openScope(
    scopeKey: string,
    s: SandboxSettings,
    agentId: string,
    sessionKey: string,
    agentWorkspaceDir: string,
  ): Promise<Sandbox> {
    const scopeDir = path.join(this.root, scopeKey);
    const known = this.open.get(scopeKey);
    // a `sandbox recreate` from the CLI removed the dir under this process: made again
    if (known && existsSync(path.join(scopeDir, "scope.json"))) return known.sandbox;
    await mkdir(scopeDir, { recursive: true, mode: 0o700 });
    const now = this.opts.clock.now();
    const meta = await readScopeMeta(scopeDir);
    await writeScopeMeta(scopeDir, {
      scopeKey,
      backend: s.backend,
      scope: s.scope,
      agentId,
      ...(s.scope === "session" ? { sessionKey } : {}),
      createdAtMs: meta?.createdAtMs ?? now,
      lastUsedAtMs: now,
    });
    let workspaceDir = agentWorkspaceDir;
    if (s.workspaceAccess === "none") {
      workspaceDir = path.join(scopeDir, "workspace");
      await mkdir(workspaceDir, { recursive: true });
    }
    const stateDir = await realpath(this.opts.stateDir);
    const backend = this.backend(s.backend);
    const sandbox = await backend.open({
      scopeKey,
      scopeDir,
      workspaceDir: await realpath(workspaceDir),
      workspaceAccess: s.workspaceAccess,
      network: s.network,
      binds: s.binds.map((b) => realBind(parseBind(b))),
      hidden: [stateDir],
      memoryMb: s.memoryMb,
      pids: s.pids,
      cpus: s.cpus,
      image: s.dockerImage,
    });
    this.open.set(scopeKey, { sandbox, backend, lastUsedMs: now, idleMs: s.dockerIdleMinutes * 60_000 });
    if (s.backend === "docker") this.armPrune();
    return sandbox;
  }

  private async touch(scopeKey: string): Promise<void> {
    const open = this.open.get(scopeKey);
    if (open) open.lastUsedMs = this.opts.clock.now();
    const dir = path.join(this.root, scopeKey);
    const meta = await readScopeMeta(dir);
    if (meta) await writeScopeMeta(dir, { ...meta, lastUsedAtMs: this.opts.clock.now() });
  }

  private async removeScope(scopeKey: string, kind: SandboxBackendKind): Promise<void> {
    const open = this.open.get(scopeKey);
    this.open.delete(scopeKey);
    await (open?.backend ?? this.backends[kind] ?? this.backend(kind)).remove(scopeKey);
    await rm(path.join(this.root, scopeKey), { recursive: true, force: true });
    this.opts.logger?.info(`sandbox: removed scope ${scopeKey}`);
  }

  /** Containers nobody ran a command in for their idle time are removed (their dir stays: a new one reuses it). */
  private armPrune(): void {
    if (this.pruneTimer !== undefined) return;
    this.pruneTimer = this.opts.clock.setTimeout(() => {
      this.pruneTimer = undefined;
      void this.pruneIdle().finally(() => {
        if ([...this.open.values()].some((o) => o.sandbox.backend === "docker")) this.armPrune();
      });
    }, PRUNE_EVERY_MS);
  }

  /** Removes the containers idle past their time. */
  private async pruneIdle(): Promise<string[]> {
    const now = this.opts.clock.now();
    const pruned: string[] = [];
    for (const [scopeKey, o] of this.open) {
      if (o.sandbox.backend !== "docker" || now - o.lastUsedMs < o.idleMs) continue;
      this.open.delete(scopeKey);
      await o.backend.remove(scopeKey);
      pruned.push(scopeKey);
      this.opts.logger?.info(`sandbox: removed idle container of scope ${scopeKey}`);
    }
    return pruned;
  }

  private backend(kind: SandboxBackendKind): SandboxBackend {
    let b = this.backends[kind];
    if (!b) {
      b = kind === "bubblewrap" ? new BubblewrapBackend() : new DockerBackend({ env: this.opts.env });
      this.backends[kind] = b;
    }
    return b;
  }

  private agentIds(): string[] {
    return configuredAgentIds(this.opts.config);
  }
}

function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

function realBind(b: SandboxBind): SandboxBind {
  return { ...b, host: realpathSync(expandHome(b.host)) };
}

type ScopeMeta = Omit<SandboxScopeEntry, "dir">;

async function readScopeMeta(dir: string): Promise<ScopeMeta | undefined> {
  try {
    return JSON.parse(await readFile(path.join(dir, "scope.json"), "utf8")) as ScopeMeta;
  } catch {
    return undefined;
  }
}

async function writeScopeMeta(dir: string, meta: ScopeMeta): Promise<void> {
  await writeFile(path.join(dir, "scope.json"), `${JSON.stringify(meta, null, 2)}\n`);
}
