import { resolveInSandbox } from "./sandbox/view.js";
import type { ToolContext } from "./types.js";
import { type ResolveOptions, resolveInWorkspace } from "./workspace-path.js";

/**
 * Where a file tool's path leads: in a sandboxed run, the host file behind the path as the sandbox sees it (symlinks
 * followed in the sandbox's tree, read-only mounts refused for writes); otherwise a real path inside the workspace.
 */
export async function resolveToolPath(ctx: ToolContext, userPath: string, opts: ResolveOptions = {}): Promise<string> {
  if (ctx.sandbox) return (await resolveInSandbox(ctx.sandbox.sandbox.view, userPath, opts)).host;
  return resolveInWorkspace(ctx.workspaceDir, userPath, opts);
}
