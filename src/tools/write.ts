import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import { requireString } from "./args.js";
import { writeFileAtomic } from "./atomic-write.js";
import type { Tool, ToolContext, ToolOutput } from "./types.js";
import { ToolError } from "./types.js";
import { resolveInWorkspace } from "./workspace-path.js";

export function createWriteTool(): Tool {
  return {
    name: "write",
    description: "Create or overwrite a file in the workspace with the given content. Creates parent directories.",
    parameters: {
      type: "object",
      properties: {
        path: { type: "string", description: "Path relative to the workspace" },
        content: { type: "string", description: "Full new file content" },
      },
      required: ["path", "content"],
      additionalProperties: false,
    },
    concurrency: "sequential",
    execute: (args, ctx) => runWrite(args, ctx),
  };
}

async function runWrite(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutput> {
  const userPath = requireString("write", args, "path");
  const content = requireString("write", args, "content");
  const target = await resolveInWorkspace(ctx.workspaceDir, userPath, { forWrite: true });
  const existed = await stat(target).then(
    () => true,
    () => false,
  );
  try {
    await mkdir(path.dirname(target), { recursive: true });
    const bytes = await writeFileAtomic(target, content);
    return {
      content: `${existed ? "overwrote" : "created"} ${userPath} (${bytes} bytes written)`,
      details: { path: target, bytes, created: !existed },
    };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === "ENOTDIR" || e.code === "EEXIST") {
      throw new ToolError(`cannot write ${userPath}: a parent path is an existing file`);
    }
    throw new ToolError(`cannot write ${userPath}: ${e.message}`);
  }
}
