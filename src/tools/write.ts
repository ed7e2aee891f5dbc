import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "./atomic-write.js";
import { defineTool } from "./define.js";
import { resolveToolPath } from "./tool-path.js";
import type { Tool, ToolContext, ToolOutput } from "./types.js";
import { ToolError } from "./types.js";

const writeArgs = z.strictObject({
  path: z.string().describe("Path relative to the workspace"),
  content: z.string().describe("Full new file content"),
});

export function createWriteTool(): Tool {
  return defineTool({
    name: "write",
    description: "Create or overwrite a file in the workspace with the given content. Creates parent directories.",
    args: writeArgs,
    concurrency: "sequential",
    execute: runWrite,
  });
}

async function runWrite(args: z.output<typeof writeArgs>, ctx: ToolContext): Promise<ToolOutput> {
  const { path: userPath, content } = args;
  const target = await resolveToolPath(ctx, userPath, { forWrite: true });
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
