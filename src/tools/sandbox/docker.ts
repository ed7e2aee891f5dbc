import { childProcess, execFileAsync } from "../../infra/child-process.js";
import {
  SANDBOX_PATH,
  SANDBOX_WORKDIR,
  type Sandbox,
  type SandboxBackend,
  type SandboxSpec,
  SandboxUnavailableError,
  type ShellProcess,
} from "./types.js";
import type { SandboxMount, SandboxView } from "./view.js";

const run = execFileAsync;

/** Every container this backend makes carries the label, so `sandbox list` and a recreate find only its own. */
export const DOCKER_LABEL = "dev.loopgate.sandbox";

export interface DockerOptions {
  /** the docker CLI: a name on PATH or a path. Default "docker". */
  docker?: string;
  /** the gateway's environment: DOCKER_HOST and DOCKER_CONTEXT reach the CLI from here */
  env?: NodeJS.ProcessEnv;
}

/**
 * One container per scope through the `docker` CLI: created on first use and kept (a session's files in /tmp survive
 * between commands), `docker exec` for each command. The container: read-only root, no network unless "host",
 * `--cap-drop ALL`, `no-new-privileges`, `--init`, tmpfs /tmp, the workspace at /workspace, memory, pids and cpus
 * limits. The file tools reach /workspace and the binds only (the image's own files are not on the host).
 */
export class DockerBackend implements SandboxBackend {
  readonly kind = "docker" as const;
  private readonly docker: string;
  private readonly env: NodeJS.ProcessEnv;

  constructor(opts: DockerOptions = {}) {
    this.docker = opts.docker ?? "docker";
    const env: NodeJS.ProcessEnv = { PATH: opts.env?.PATH ?? SANDBOX_PATH, HOME: opts.env?.HOME };
    for (const name of ["DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY"]) {
      if (opts.env?.[name] !== undefined) env[name] = opts.env[name];
    }
    this.env = env;
  }

  async check(): Promise<void> {
    try {
      await this.cli(["version", "--format", "{{.Server.Version}}"]);
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stderr?: string };
      if (e.code === "ENOENT") {
        throw new SandboxUnavailableError(
          `no Docker daemon answers: the docker CLI is not installed (${this.docker} not found): install Docker, or use backend "bubblewrap"`,
        );
      }
      throw new SandboxUnavailableError(
        `no Docker daemon answers (docker version: ${
          String(e.stderr ?? e.message)
            .trim()
            .split("\n")[0]
        }): start it, or set DOCKER_HOST, or use backend "bubblewrap"`,
      );
    }
  }

  async open(spec: SandboxSpec): Promise<Sandbox> {
    const name = containerName(spec.scopeKey);
    await this.ensureContainer(name, spec);
    const mounts: SandboxMount[] = [
      {
        inside: SANDBOX_WORKDIR,
        host: spec.workspaceDir,
        writable: spec.workspaceAccess !== "ro",
        ...(spec.workspaceAccess === "ro"
          ? { readOnlyReason: 'the workspace is mounted read-only: workspaceAccess is "ro"' }
          : {}),
      },
      ...spec.binds.map((b) => ({ inside: b.inside, host: b.host, writable: b.writable })),
    ];
    const view: SandboxView = {
      workdir: SANDBOX_WORKDIR,
      mounts,
      symlinks: new Map(),
      hidden: spec.hidden,
      backend: "docker",
    };
    const docker = this.docker;
    const cliEnv = this.env;
    return {
      backend: "docker",
      scopeKey: spec.scopeKey,
      location: `container ${name}`,
      view,
      spawnShell(command: string, env: Record<string, string>): ShellProcess {
        const vars = { ...env, HOME: SANDBOX_WORKDIR, PATH: SANDBOX_PATH };
        // `-e NAME` (no value) takes the value from the CLI's own environment: values never appear on a command line
        const envArgs = Object.keys(vars).flatMap((k) => ["-e", k]);
        return childProcess().spawn(
          docker,
          ["exec", "-i", "-w", SANDBOX_WORKDIR, ...envArgs, name, "/bin/sh", "-c", command],
          {
            env: { ...cliEnv, ...vars, PATH: cliEnv.PATH },
            detached: true,
            stdio: ["ignore", "pipe", "pipe"],
          },
        );
      },
      // killing `docker exec` leaves its process running in the container: end every process but the init
      killInside: async () => {
        await run(docker, ["exec", name, "/bin/sh", "-c", "kill -9 -1"], { env: cliEnv }).catch(() => {});
      },
    };
  }

  async remove(scopeKey: string): Promise<void> {
    await this.cli(["rm", "-f", containerName(scopeKey)]).catch(() => {});
  }

  /** The containers of this backend: name and scope, for `sandbox list`. */
  async list(): Promise<Array<{ name: string; scopeKey: string }>> {
    const { stdout } = await this.cli([
      "ps",
      "-a",
      "--filter",
      `label=${DOCKER_LABEL}`,
      "--format",
      `{{.Names}}\t{{.Label "${DOCKER_LABEL}"}}`,
    ]);
    return stdout
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => {
        const [name, scopeKey] = l.split("\t");
        return { name, scopeKey };
      });
  }

  private async ensureContainer(name: string, spec: SandboxSpec): Promise<void> {
    const state = await this.cli(["inspect", "--format", "{{.State.Running}}", name]).then(
      (r) => r.stdout.trim(),
      () => "missing",
    );
    if (state === "true") return;
    if (state === "false") {
      await this.cli(["start", name]);
      return;
    }
    const args = [
      "run",
      "-d",
      "--name",
      name,
      "--label",
      `${DOCKER_LABEL}=${spec.scopeKey}`,
      "--init",
      "--read-only",
      "--cap-drop",
      "ALL",
      "--security-opt",
      "no-new-privileges",
      "--network",
      spec.network === "host" ? "host" : "none",
      "--tmpfs",
      "/tmp:rw,nosuid,nodev",
      "--workdir",
      SANDBOX_WORKDIR,
      "--hostname",
      "sandbox",
      "-v",
      `${spec.workspaceDir}:${SANDBOX_WORKDIR}:${spec.workspaceAccess === "ro" ? "ro" : "rw"}`,
    ];
    for (const b of spec.binds) args.push("-v", `${b.host}:${b.inside}:${b.writable ? "rw" : "ro"}`);
    for (const h of spec.hidden) {
      if (h.startsWith(`${spec.workspaceDir}/`))
        args.push("--tmpfs", `${SANDBOX_WORKDIR}/${h.slice(spec.workspaceDir.length + 1)}`);
    }
    if (spec.memoryMb !== undefined) args.push("--memory", `${spec.memoryMb}m`);
    if (spec.pids !== undefined) args.push("--pids-limit", String(spec.pids));
    if (spec.cpus !== undefined) args.push("--cpus", String(spec.cpus));
    // the container idles on its init; commands arrive through `docker exec`
    args.push(spec.image, "sleep", "infinity");
    await this.cli(args);
  }

  private cli(args: string[]) {
    return run(this.docker, args, { env: this.env, maxBuffer: 4 * 1024 * 1024 });
  }
}

/** Container names allow [a-zA-Z0-9_.-]; a scope key is made of those already. */
export function containerName(scopeKey: string): string {
  return `loopgate-sbx-${scopeKey}`;
}
