import { lstat, readlink, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "./types.js";

/** More hops than this means a symlink loop (Linux gives up at 40 as well). */
const MAX_SYMLINK_HOPS = 40;

export interface ResolveOptions {
  /** The target will be written: it must not be the workspace itself or an existing directory. */
  forWrite?: boolean;
}

/**
 * Resolves `userPath` (relative to the workspace, or absolute) to a real path inside the workspace.
 *
 * Every existing component is checked on disk, so a symlink anywhere along the way (the file itself, a parent
 * directory, or the nearest existing ancestor of a file that does not exist yet) that leads outside is refused.
 * The returned path has its symlinks resolved, so writing to it cannot follow a link out afterwards.
 * A check-then-use window remains: a process that swaps a directory for a symlink in between is not stopped.
 */
export async function resolveInWorkspace(
  workspaceDir: string,
  userPath: string,
  opts: ResolveOptions = {},
): Promise<string> {
  if (typeof userPath !== "string") throw new ToolError("path must be a string");
  if (userPath.trim() === "") throw new ToolError("path is empty");
  if (userPath.includes("\0")) throw new ToolError(`path ${JSON.stringify(userPath)} contains a NUL byte`);

  let root: string;
  try {
    root = await realpath(workspaceDir);
  } catch {
    throw new ToolError(`workspace directory ${workspaceDir} does not exist`);
  }
  const shown = JSON.stringify(userPath);

  // The caller may name the workspace by its configured path or by its real path (e.g. /tmp vs /private/tmp).
  const lexical = path.resolve(workspaceDir, userPath);
  let relative: string | undefined;
  for (const base of [path.resolve(workspaceDir), root]) {
    if (isInside(base, lexical)) {
      relative = path.relative(base, lexical);
      break;
    }
  }
  if (relative === undefined) throw new ToolError(`path ${shown} is outside the workspace (${root})`);

  const resolved = await walk(root, relative, shown);
  if (opts.forWrite) {
    if (resolved === root) throw new ToolError(`path ${shown} is the workspace directory itself, not a file`);
    const existing = await stat(resolved).catch(() => undefined);
    if (existing?.isDirectory()) throw new ToolError(`path ${shown} is a directory`);
  }
  return resolved;
}

/** Follows `relative` one component at a time from the real workspace root, checking each symlink it meets. */
async function walk(root: string, relative: string, shown: string): Promise<string> {
  let current = root;
  let pending = splitComponents(relative);
  let hops = 0;

  while (pending.length > 0) {
    const [component, ...rest] = pending;
    const candidate = path.join(current, component);
    const info = await lstat(candidate).catch((err: NodeJS.ErrnoException) => {
      // ENOTDIR: a parent is a regular file. Either way the rest does not exist and has no links to follow.
      if (err.code === "ENOENT" || err.code === "ENOTDIR") return undefined;
      throw new ToolError(`cannot access path ${shown}: ${err.message}`);
    });
    if (!info) return path.join(candidate, ...rest);
    if (!info.isSymbolicLink()) {
      current = candidate;
      pending = rest;
      continue;
    }

    const linkName = path.relative(root, candidate) || ".";
    const outside = new ToolError(
      `path ${shown} goes through symlink "${linkName}", which leads outside the workspace (${root})`,
    );
    const real = await realpath(candidate).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ELOOP") throw new ToolError(`path ${shown} has a symlink loop at "${linkName}"`);
      if (err.code === "ENOENT" || err.code === "ENOTDIR") return undefined;
      throw new ToolError(`cannot access path ${shown}: ${err.message}`);
    });
    if (real !== undefined) {
      if (!isInside(root, real)) throw outside;
      current = real;
      pending = rest;
      continue;
    }

    // A dangling link: writing through it would create its target, so the target must be inside too.
    // Its target is followed from the root again, since the target may itself go through further links.
    hops++;
    if (hops > MAX_SYMLINK_HOPS) throw new ToolError(`path ${shown} has a symlink loop at "${linkName}"`);
    const target = path.resolve(current, await readlink(candidate));
    if (!isInside(root, target)) throw outside;
    current = root;
    pending = [...splitComponents(path.relative(root, target)), ...rest];
  }
  return current;
}

function splitComponents(relative: string): string[] {
  return relative.split(path.sep).filter((part) => part !== "" && part !== ".");
}

/** True when `target` is `root` or below it. Both must be absolute and normalized. */
export function isInside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}
