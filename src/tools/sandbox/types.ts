import type { ChildProcessByStdio } from "node:child_process";
import type { Readable } from "node:stream";
import type { SandboxBackendKind, SandboxBind, SandboxNetwork, WorkspaceAccess } from "./settings.js";
import type { SandboxView } from "./view.js";

/** A command started in a sandbox: its output on two pipes, no stdin. */
export type ShellProcess = ChildProcessByStdio<null, Readable, Readable>;

/** Where the workspace is inside every sandbox, whatever the backend. */
export const SANDBOX_WORKDIR = "/workspace";

/** PATH inside a sandbox: the host's PATH names host directories the sandbox may not have. */
export const SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** What one scope's sandbox is made of; the backend turns it into namespaces or a container. */
export interface SandboxSpec {
  /** names the scope: "agent-main", "session-main-<hash>", "shared" */
  scopeKey: string;
  /** the host directory holding what the scope keeps (its tmp, its /etc files, its workspace for access "none") */
  scopeDir: string;
  /** the host directory mounted at /workspace */
  workspaceDir: string;
  workspaceAccess: WorkspaceAccess;
  network: SandboxNetwork;
  binds: readonly SandboxBind[];
  /** host paths never shown inside (the state dir, when the workspace or a bind holds it) */
  hidden: readonly string[];
  memoryMb?: number;
  pids?: number;
  cpus?: number;
  /** docker only */
  image: string;
}

/**
 * One scope's live sandbox: exec starts its commands here, and the file tools resolve their paths in `view`.
 * Obtained from a SandboxBackend; the port every backend implements (sandbox.conformance.ts runs against each).
 */
export interface Sandbox {
  readonly backend: SandboxBackendKind;
  readonly scopeKey: string;
  /** where the sandbox lives, for `sessions.list` and `sandbox list`: its scope dir, or its container's name */
  readonly location: string;
  readonly view: SandboxView;
  /**
   * Starts `/bin/sh -c command` inside with exactly `env` (the exec tool's scrubbed environment), cwd the workspace,
   * as the leader of its own process group on the host: a signal to the group ends everything it started inside.
   */
  spawnShell(command: string, env: Record<string, string>): ShellProcess;
  /** After exec killed a command's process group: ends what it left running inside (a container's processes). */
  killInside?(): Promise<void>;
}

export interface SandboxBackend {
  readonly kind: SandboxBackendKind;
  /** Whether the backend can run here; throws SandboxUnavailableError naming the fix. At load, when a mode is not off. */
  check(): Promise<void>;
  /** The sandbox of a scope, made (or, for a container, found or started) as needed. */
  open(spec: SandboxSpec): Promise<Sandbox>;
  /** Removes what the backend keeps for a scope beside its dir (a container); nothing for bubblewrap. */
  remove(scopeKey: string): Promise<void>;
}

/** A backend that cannot run here (no bwrap, no user namespaces, no Docker daemon): a load-time error. */
export class SandboxUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SandboxUnavailableError";
  }
}

/** What a sandboxed run carries (its profile's `sandbox` slot, the tools' context): the scope's sandbox and its keys. */
export interface RunSandbox {
  readonly sandbox: Sandbox;
  readonly scope: "session" | "agent" | "shared";
  readonly workspaceAccess: "none" | "ro" | "rw";
  readonly network: "none" | "host";
  /** why this session is sandboxed, e.g. `agents.defaults.sandbox.mode is "all" (bubblewrap, network none)` */
  readonly why: string;
  /** names passed from the gateway's environment, beside tools.exec.env's */
  readonly env: readonly string[];
  /** exec's default timeout and its cap inside this sandbox */
  readonly timeoutSeconds?: number;
}
