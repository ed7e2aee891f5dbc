import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import type { JsonSchema } from "../providers/types.js";
import { writeFileAtomic } from "./atomic-write.js";
import { defineTool } from "./define.js";
import { resolveToolPath } from "./tool-path.js";
import type { Tool, ToolContext, ToolOutput } from "./types.js";
import { ToolError } from "./types.js";

/** Built on the first call (tools/define.ts); `writeParameters` is its JSON Schema, written out. */
const writeArgs = () =>
  z.strictObject({
    path: z.string().describe("Path relative to the workspace"),
    content: z.string().describe("Full new file content"),
  });

export const writeParameters: JsonSchema = {
  type: "object",
  properties: {
    path: { type: "string", description: "Path relative to the workspace" },
    content: { type: "string", description: "Full new file content" },
  },
  required: ["path", "content"],
  additionalProperties: false,
};

export function createWriteTool(): Tool {
  return defineTool({
    name: "write",
    description: "Create or overwrite a file in the workspace with the given content. Creates parent directories.",
    args: writeArgs,
    parameters: writeParameters,
    concurrency: "sequential",
    execute: runWrite,
  });
}

async function runWrite(args: z.output<ReturnType<typeof writeArgs>>, ctx: ToolContext): Promise<ToolOutput> {
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
