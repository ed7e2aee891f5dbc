import { mkdir, stat } from "node:fs/promises";
import path from "node:path";
import type { JsonSchema } from "../providers/types.js";
import { writeFileAtomic } from "./atomic-write.js";
import type { ArgsOf } from "./builtin-args.js";
import { defineTool } from "./define.js";
import { resolveToolPath } from "./tool-path.js";
import type { Tool, ToolContext, ToolOutput } from "./types.js";
import { ToolError } from "./types.js";

/** `writeArgs` of tools/builtin-args.ts as JSON Schema, written out (tools/define.ts says why). */
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
    args: () => import("./builtin-args.js").then((m) => m.writeArgs()),
    parameters: writeParameters,
    concurrency: "sequential",
    execute: runWrite,
  });
}

async function runWrite(args: ArgsOf<"writeArgs">, ctx: ToolContext): Promise<ToolOutput> {
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
