import type { LoopgateConfig, SandboxConfig } from "../../config/schema.js";
import { normalizeSessionKey } from "../../session/keys.js";

export type SandboxMode = NonNullable<SandboxConfig["mode"]>;
export type SandboxScope = NonNullable<SandboxConfig["scope"]>;
export type WorkspaceAccess = NonNullable<SandboxConfig["workspaceAccess"]>;
export type SandboxBackendKind = NonNullable<SandboxConfig["backend"]>;
export type SandboxNetwork = NonNullable<SandboxConfig["network"]>;

/** An agent's sandbox keys with every default filled in (agents.list[].sandbox over agents.defaults.sandbox). */
export interface SandboxSettings {
  mode: SandboxMode;
  scope: SandboxScope;
  workspaceAccess: WorkspaceAccess;
  backend: SandboxBackendKind;
  network: SandboxNetwork;
  env: readonly string[];
  binds: readonly string[];
  timeoutSeconds?: number;
  memoryMb?: number;
  pids?: number;
  cpus?: number;
  dockerImage: string;
  dockerIdleMinutes: number;
  /** where each key came from, for errors and `sandbox explain`: "agents.defaults.sandbox" or "agents.list[2].sandbox" */
  keyPath(key: string): string;
}

export const DEFAULT_DOCKER_IMAGE = "debian:bookworm-slim";
/** OpenClaw prunes idle sandboxes after 24 hours */
export const DEFAULT_DOCKER_IDLE_MINUTES = 24 * 60;

/** OpenClaw's defaults (off, scope agent, workspaceAccess none), with bubblewrap as the backend: it needs no daemon. */
export function sandboxSettings(config: Pick<LoopgateConfig, "agents">, agentId: string): SandboxSettings {
  const defaults = config.agents.defaults.sandbox;
  const index = config.agents.list.findIndex((a) => a.id === agentId);
  const own = index >= 0 ? (config.agents.list[index].sandbox ?? {}) : {};
  const pick = <K extends keyof typeof own>(key: K) => (own[key] !== undefined ? own[key] : defaults[key]);
  return {
    mode: pick("mode") ?? "off",
    scope: pick("scope") ?? "agent",
    workspaceAccess: pick("workspaceAccess") ?? "none",
    backend: pick("backend") ?? "bubblewrap",
    network: pick("network") ?? "none",
    env: pick("env") ?? [],
    binds: pick("binds") ?? [],
    timeoutSeconds: pick("timeoutSeconds"),
    memoryMb: pick("memoryMb"),
    pids: pick("pids"),
    cpus: pick("cpus"),
    dockerImage: own.docker?.image ?? defaults.docker?.image ?? DEFAULT_DOCKER_IMAGE,
    dockerIdleMinutes: own.docker?.idleMinutes ?? defaults.docker?.idleMinutes ?? DEFAULT_DOCKER_IDLE_MINUTES,
    keyPath: (key) => {
      const top = key.split(".")[0] as keyof typeof own;
      return index >= 0 && own[top] !== undefined
        ? `agents.list[${index}].sandbox.${key}`
        : `agents.defaults.sandbox.${key}`;
    },
  };
}

/** Whether a session's runs are sandboxed, and the reason in words a user reads (`sandbox explain`, approvals). */
export interface SandboxDecision {
  sandboxed: boolean;
  why: string;
}

/** The agent's main session: `agent:<agentId>:main` ("non-main" sandboxes every other one, cron and hooks too). */
export function isMainSession(agentId: string, sessionKey: string): boolean {
  return normalizeSessionKey(sessionKey, agentId).key === `agent:${agentId}:main`;
}

export function decideSandbox(settings: SandboxSettings, agentId: string, sessionKey: string): SandboxDecision {
  const mode = settings.keyPath("mode");
  if (settings.mode === "off") return { sandboxed: false, why: `${mode} is "off"` };
  if (settings.mode === "non-main" && isMainSession(agentId, sessionKey)) {
    return { sandboxed: false, why: `${mode} is "non-main" and this is agent "${agentId}"'s main session` };
  }
  const what = settings.mode === "all" ? `${mode} is "all"` : `${mode} is "non-main" and this is not the main session`;
  return { sandboxed: true, why: `${what} (${settings.backend}, network ${settings.network})` };
}

/** A bind of `binds`, parsed (the schema checked its shape). */
export interface SandboxBind {
  host: string;
  inside: string;
  writable: boolean;
}

export function parseBind(bind: string): SandboxBind {
  const [host, inside, mode] = bind.split(":");
  return { host, inside, writable: mode === "rw" };
}
