import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ToolContext } from "./types.js";

export interface Sandbox {
  /** Real path of the workspace. */
  ws: string;
  /** A sibling of the workspace, i.e. somewhere the tools must not reach. */
  outside: string;
  ctx(extra?: Partial<ToolContext>): ToolContext;
  cleanup(): Promise<void>;
}

/** A real temp directory holding a workspace and an "outside" directory next to it. */
export async function makeSandbox(): Promise<Sandbox> {
  const root = await realpath(await mkdtemp(path.join(tmpdir(), "loopgate-tools-")));
  const ws = path.join(root, "ws");
  const outside = path.join(root, "outside");
  await mkdir(ws);
  await mkdir(outside);
  return {
    ws,
    outside,
    ctx: (extra = {}) => ({ workspaceDir: ws, signal: new AbortController().signal, ...extra }),
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
}
