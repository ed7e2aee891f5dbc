import { existsSync, lstatSync, realpathSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { childProcess, execFileAsync } from "../../infra/child-process.js";
import { isInside } from "../workspace-path.js";
import {
  SANDBOX_PATH,
  SANDBOX_WORKDIR,
  type Sandbox,
  type SandboxBackend,
  type SandboxSpec,
  SandboxUnavailableError,
  type ShellProcess,
} from "./types.js";
import { mountFor, type SandboxMount, type SandboxView } from "./view.js";

const run = execFileAsync;

/** The system directories shown read-only (the ones a merged-/usr system has as symlinks are made symlinks). */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/**
 * What of the host's /etc is shown: what programs need to link, resolve names, verify TLS and know the time. Not the
 * rest: /etc holds shadow, ssh host keys, machine-id and whatever secrets an admin put there. passwd, group and
 * hostname are the sandbox's own (written into its scope dir).
 */
const ETC_ENTRIES = [
  "alternatives",
  "ca-certificates",
  "ca-certificates.conf",
  "ssl",
  "pki",
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "nsswitch.conf",
  "hosts",
  "resolv.conf",
  "gai.conf",
  "host.conf",
  "protocols",
  "services",
  "localtime",
  "timezone",
  "os-release",
  "debian_version",
  "lsb-release",
  "mime.types",
  "magic",
  "profile",
  "bash.bashrc",
  "inputrc",
  "terminfo",
  "locale.alias",
];

export interface BubblewrapOptions {
  /** the bwrap binary: a name looked up on PATH, or a path. Default "bwrap". */
  bwrap?: string;
}

/**
 * Linux namespaces through the `bwrap` binary, no daemon: every exec is one `bwrap` process with new user, mount,
 * pid, ipc, uts and (unless network "host") net namespaces, all capabilities dropped, killed with its parent, in a
 * new session (no TIOCSTI into the gateway's terminal). Its tree: the system directories read-only, a few /etc
 * files, the scope's own passwd/group, /proc and /dev of its own, the scope's tmp at /tmp, the workspace at
 * /workspace (read-only for access "ro") and the binds. Limits: memoryMb as an address-space cap per process
 * (`ulimit -v`, no raising it back without CAP_SYS_RESOURCE); pids and cpus need cgroups, which bwrap has not.
 */
export class BubblewrapBackend implements SandboxBackend {
  readonly kind = "bubblewrap" as const;
  private readonly bwrap: string;

  constructor(opts: BubblewrapOptions = {}) {
    this.bwrap = opts.bwrap ?? "bwrap";
  }

  async check(): Promise<void> {
    try {
      await run(this.bwrap, ["--version"]);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === "ENOENT") {
        throw new SandboxUnavailableError(
          `the bubblewrap sandbox needs the bwrap binary, which is not installed (${this.bwrap} not found): install it (apt-get install bubblewrap, dnf install bubblewrap) or set agents.defaults.sandbox.mode to "off"`,
        );
      }
      throw new SandboxUnavailableError(`bwrap --version failed: ${e.message}`);
    }
    try {
      await run(this.bwrap, [
        "--ro-bind",
        "/",
        "/",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "true",
      ]);
    } catch (err) {
      const stderr = String((err as { stderr?: string }).stderr ?? (err as Error).message).trim();
      throw new SandboxUnavailableError(
        `bwrap cannot create namespaces here (${stderr}): user namespaces are off or restricted. Allow them (sysctl -w kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 sysctl -w kernel.apparmor_restrict_unprivileged_userns=0; in a container, run it with --security-opt seccomp=unconfined or use the docker backend), or set agents.defaults.sandbox.mode to "off"`,
      );
    }
  }

  async open(spec: SandboxSpec): Promise<Sandbox> {
    const { args, view } = await bubblewrapTree(spec);
    const bwrap = this.bwrap;
    const memoryKb = spec.memoryMb !== undefined ? spec.memoryMb * 1024 : undefined;
    return {
      backend: "bubblewrap",
      scopeKey: spec.scopeKey,
      location: spec.scopeDir,
      view,
      spawnShell(command: string, env: Record<string, string>): ShellProcess {
        const shell =
          memoryKb !== undefined
            ? ["/bin/sh", "-c", `ulimit -v ${memoryKb} || exit 125; exec /bin/sh -c "$1"`, "sh", command]
            : ["/bin/sh", "-c", command];
        // the options go through fd 3 (--args): the sandbox's /proc/1/cmdline then names no host path
        const child = childProcess().spawn(bwrap, ["--args", "3", ...shell], {
          env: { ...env, HOME: SANDBOX_WORKDIR, PATH: SANDBOX_PATH },
          detached: true,
          stdio: ["ignore", "pipe", "pipe", "pipe"],
        });
        const argsPipe = child.stdio[3] as NodeJS.WritableStream | null;
        // bwrap may die before reading them (a bad bind): the exit status says why, not an EPIPE
        (argsPipe as unknown as { on?: (e: string, f: () => void) => void })?.on?.("error", () => {});
        argsPipe?.end(Buffer.from(args.map((a) => `${a}\0`).join(""), "utf8"));
        return child as unknown as ShellProcess;
      },
    };
  }

  async remove(): Promise<void> {}
}

/** The bwrap options for `spec` and the view the file tools resolve paths in (the same mounts, one list). */
export async function bubblewrapTree(spec: SandboxSpec): Promise<{ args: string[]; view: SandboxView }> {
  const args = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "sandbox"];
  if (spec.network === "host") args.push("--share-net");
  const mounts: SandboxMount[] = [];
  const symlinks = new Map<string, string>();
  const roBind = (host: string, inside: string) => {
    args.push("--ro-bind", host, inside);
    mounts.push({ inside, host, writable: false });
  };
  for (const dir of SYSTEM_DIRS) {
    const info = lstatSafe(dir);
    if (!info) continue;
    if (info.isSymbolicLink()) {
      const target = realpathSync(dir);
      // a merged-/usr link (/bin -> usr/bin): the same link inside
      if (!isInside("/usr", target)) continue;
      const relative = path.posix.relative("/", target);
      args.push("--symlink", relative, dir);
      symlinks.set(dir, relative);
    } else roBind(dir, dir);
  }
  args.push("--dir", "/etc");
  for (const name of ETC_ENTRIES) {
    const host = path.join("/etc", name);
    if (!existsSync(host)) continue;
    roBind(realpathSync(host), host);
  }
  const etc = path.join(spec.scopeDir, "etc");
  await mkdir(etc, { recursive: true });
  for (const [name, text] of Object.entries(etcFiles())) {
    await writeFile(path.join(etc, name), text);
    roBind(path.join(etc, name), `/etc/${name}`);
  }
  args.push("--proc", "/proc", "--dev", "/dev");
  const tmp = path.join(spec.scopeDir, "tmp");
  await mkdir(tmp, { recursive: true });
  args.push("--bind", tmp, "/tmp");
  mounts.push({ inside: "/tmp", host: tmp, writable: true });
  const workspaceWritable = spec.workspaceAccess !== "ro";
  args.push(workspaceWritable ? "--bind" : "--ro-bind", spec.workspaceDir, SANDBOX_WORKDIR);
  mounts.push({
    inside: SANDBOX_WORKDIR,
    host: spec.workspaceDir,
    writable: workspaceWritable,
    ...(workspaceWritable ? {} : { readOnlyReason: 'the workspace is mounted read-only: workspaceAccess is "ro"' }),
  });
  for (const bind of spec.binds) {
    args.push(bind.writable ? "--bind" : "--ro-bind", bind.host, bind.inside);
    mounts.push({ inside: bind.inside, host: bind.host, writable: bind.writable });
  }
  const view: SandboxView = { workdir: SANDBOX_WORKDIR, mounts, symlinks, hidden: spec.hidden, backend: "bubblewrap" };
  // a hidden path some mount shows (the state dir inside the workspace) is covered by an empty tmpfs
  for (const hidden of spec.hidden) {
    for (const m of mounts) {
      if (!isInside(m.host, hidden) || !lstatSafe(hidden)?.isDirectory()) continue;
      const inside = path.posix.join(m.inside, path.relative(m.host, hidden));
      if (mountFor(view, inside) === m) args.push("--tmpfs", inside);
    }
  }
  args.push("--chdir", SANDBOX_WORKDIR);
  return { args, view };
}

/** The sandbox's own identity files: the host's user names and groups are not its business. */
function etcFiles(): Record<string, string> {
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  return {
    passwd: `sandbox:x:${uid}:${gid}:Loopgate sandbox:${SANDBOX_WORKDIR}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `sandbox:x:${gid}:\nnogroup:x:65534:\n`,
    hostname: "sandbox\n",
  };
}

function lstatSafe(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}
