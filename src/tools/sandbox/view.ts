import { lstat, readlink, stat } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "../types.js";
import { isInside } from "../workspace-path.js";

/**
 * What a sandbox shows at which path, as the gateway's file tools need to know it: the file tools run in the gateway
 * (no process per `read`), but resolve every path the way the sandbox sees it. A symlink in the workspace is followed
 * inside the sandbox's tree (`passwd -> /etc/passwd` reaches the sandbox's /etc/passwd, not the host's), and a path
 * the sandbox has no mount for (/proc, /dev, a container image's own files) is refused.
 */
export interface SandboxMount {
  /** absolute path inside the sandbox */
  inside: string;
  /** the real host path behind it (a directory or a file) */
  host: string;
  writable: boolean;
  /** shown when a write is refused on a read-only mount (e.g. the workspace with workspaceAccess "ro") */
  readOnlyReason?: string;
}

export interface SandboxView {
  /** where a relative path starts: the workspace's path inside ("/workspace") */
  workdir: string;
  mounts: readonly SandboxMount[];
  /** symlinks the sandbox itself has (bubblewrap's /bin -> usr/bin on a merged-/usr system) */
  symlinks: ReadonlyMap<string, string>;
  /** host paths masked inside (the state dir when a mount holds it): never reached */
  hidden: readonly string[];
  /** named in refusals: "bubblewrap" or "docker" */
  backend: string;
}

const MAX_SYMLINK_HOPS = 40;

export interface ResolvedSandboxPath {
  /** the path inside the sandbox, symlinks resolved */
  inside: string;
  /** the host file behind it */
  host: string;
}

/** Resolves a file tool's path in the sandbox's view to the host file behind it; refuses what the sandbox cannot reach. */
export async function resolveInSandbox(
  view: SandboxView,
  userPath: string,
  opts: { forWrite?: boolean } = {},
): Promise<ResolvedSandboxPath> {
  if (typeof userPath !== "string" || userPath.trim() === "") throw new ToolError("path is empty");
  if (userPath.includes("\0")) throw new ToolError(`path ${JSON.stringify(userPath)} contains a NUL byte`);
  const shown = JSON.stringify(userPath);
  let pending = components(path.posix.resolve(view.workdir, userPath));
  let current = "/";
  let hops = 0;
  let missing = false;
  while (pending.length > 0) {
    const [component, ...rest] = pending;
    const candidate = path.posix.join(current, component);
    const link = view.symlinks.get(candidate);
    if (link !== undefined || !missing) {
      const target = link ?? (await hostLink(view, candidate, shown));
      if (target === "missing") {
        missing = true;
      } else if (target !== undefined) {
        if (++hops > MAX_SYMLINK_HOPS) throw new ToolError(`path ${shown} has a symlink loop at "${candidate}"`);
        pending = [...components(path.posix.resolve(current, target)), ...rest];
        current = "/";
        continue;
      }
    }
    current = candidate;
    pending = rest;
  }
  const mount = mountFor(view, current);
  if (!mount) {
    throw new ToolError(
      `path ${shown} is ${current} in the ${view.backend} sandbox, which the file tools cannot reach (only ${reachable(view)}); use exec to look there`,
    );
  }
  const host = path.join(mount.host, path.posix.relative(mount.inside, current));
  // a hidden path below a mount (the state dir inside the workspace) is masked there; the mount itself may sit inside
  // a hidden path (a scope's own workspace under the state dir)
  if (view.hidden.some((h) => h !== mount.host && isInside(mount.host, h) && isInside(h, host))) {
    throw new ToolError(`path ${shown} is hidden in the sandbox`);
  }
  if (opts.forWrite) {
    if (!mount.writable) {
      throw new ToolError(
        `path ${shown} is read-only in the sandbox${mount.readOnlyReason ? ` (${mount.readOnlyReason})` : ""}`,
      );
    }
    if (current === view.workdir) throw new ToolError(`path ${shown} is the workspace directory itself, not a file`);
    if ((await stat(host).catch(() => undefined))?.isDirectory()) throw new ToolError(`path ${shown} is a directory`);
  }
  return { inside: current, host };
}

/**
 * The link target of `inside` when it is a symlink on the host file behind it, undefined when it is not a link,
 * "missing" when it does not exist (the rest of the path does not either).
 */
async function hostLink(view: SandboxView, inside: string, shown: string): Promise<string | undefined | "missing"> {
  const mount = mountFor(view, inside);
  // a directory the sandbox made to hold mounts (/, /etc): no link, and it exists
  if (!mount) return view.mounts.some((m) => isInside(inside, m.inside)) ? undefined : "missing";
  const host = path.join(mount.host, path.posix.relative(mount.inside, inside));
  const info = await lstat(host).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT" || err.code === "ENOTDIR") return undefined;
    throw new ToolError(`cannot access path ${shown}: ${err.message}`);
  });
  if (!info) return "missing";
  if (!info.isSymbolicLink()) return undefined;
  // a mount point is what the mount shows, not the host's link (the host path was made real when mounted)
  if (inside === mount.inside) return undefined;
  return readlink(host);
}

/** The innermost mount holding `inside` (a later mount over an earlier one wins, as in the sandbox). */
export function mountFor(view: SandboxView, inside: string): SandboxMount | undefined {
  let best: SandboxMount | undefined;
  for (const m of view.mounts) {
    if (isInside(m.inside, inside) && (!best || m.inside.length >= best.inside.length)) best = m;
  }
  return best;
}

function reachable(view: SandboxView): string {
  const tops = view.mounts.map((m) => m.inside).filter((p) => !p.startsWith("/etc/"));
  return [...new Set(tops)].join(", ");
}

function components(absolute: string): string[] {
  return absolute.split("/").filter((c) => c !== "" && c !== ".");
}
