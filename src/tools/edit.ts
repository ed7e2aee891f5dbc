import { readFile } from "node:fs/promises";
import type { JsonSchema } from "../providers/types.js";
import { writeFileAtomic } from "./atomic-write.js";
import type { ArgsOf } from "./builtin-args.js";
import { defineTool } from "./define.js";
import { resolveToolPath } from "./tool-path.js";
import type { Tool, ToolContext, ToolOutput } from "./types.js";
import { ToolError } from "./types.js";

/** `editArgs` of tools/builtin-args.ts as JSON Schema, written out (tools/define.ts says why). */
export const editParameters: JsonSchema = {
  type: "object",
  properties: {
    path: { type: "string", description: "Path relative to the workspace" },
    oldText: { type: "string", minLength: 1, description: "Exact text to replace, including whitespace" },
    newText: { type: "string", description: "Replacement text" },
  },
  required: ["path", "oldText", "newText"],
  additionalProperties: false,
};

export function createEditTool(): Tool {
  return defineTool({
    name: "edit",
    description:
      "Replace one exact occurrence of oldText with newText in a workspace file. oldText must match exactly once; include surrounding lines to make it unique.",
    args: () => import("./builtin-args.js").then((m) => m.editArgs()),
    parameters: editParameters,
    concurrency: "sequential",
    execute: runEdit,
  });
}

async function runEdit(args: ArgsOf<"editArgs">, ctx: ToolContext): Promise<ToolOutput> {
  const userPath = args.path;
  let { oldText, newText } = args;
  if (oldText === newText) throw new ToolError("edit: oldText and newText are identical; nothing would change");
  const target = await resolveToolPath(ctx, userPath, { forWrite: true });

  const original = await readFile(target, "utf8").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT" || err.code === "ENOTDIR") throw new ToolError(`file not found: ${userPath}`);
    throw new ToolError(`cannot read ${userPath}: ${err.message}`);
  });

  let count = countOccurrences(original, oldText);
  // Models write "\n" even when the file uses CRLF; match such a file's line endings instead of failing.
  if (count === 0 && original.includes("\r\n") && oldText.includes("\n") && !oldText.includes("\r\n")) {
    const crlfOld = oldText.replace(/\n/g, "\r\n");
    const crlfCount = countOccurrences(original, crlfOld);
    if (crlfCount > 0) {
      oldText = crlfOld;
      newText = newText.replace(/\r?\n/g, "\r\n");
      count = crlfCount;
    }
  }
  if (count === 0) {
    throw new ToolError(
      `oldText was not found in ${userPath}; it must match the file exactly, including whitespace and indentation`,
    );
  }
  if (count > 1) {
    throw new ToolError(
      `oldText occurs ${count} times in ${userPath}; include more surrounding context so it matches exactly once`,
    );
  }

  const index = original.indexOf(oldText);
  // Spliced by index, not String.replace, whose "$&"-style patterns would mangle code in newText.
  const updated = original.slice(0, index) + newText + original.slice(index + oldText.length);
  await writeFileAtomic(target, updated);

  const line = lineAt(original, index);
  const removed = lineCount(oldText);
  const added = lineCount(newText);
  const span = removed === 1 ? `line ${line}` : `lines ${line}-${line + removed - 1}`;
  return {
    content: `edited ${userPath}: replaced ${span} (${removed} line${removed === 1 ? "" : "s"} -> ${added} line${added === 1 ? "" : "s"})`,
    details: { path: target, line, removedLines: removed, addedLines: added },
  };
}

/** Overlapping matches count too: "aa" in "aaa" is ambiguous about which two chars the model meant. */
function countOccurrences(haystack: string, needle: string): number {
  let count = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) count++;
  return count;
}

function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) line++;
  return line;
}

function lineCount(text: string): number {
  if (text === "") return 0;
  const breaks = text.split("\n").length - 1;
  // A trailing newline ends the last line rather than starting a new one.
  return text.endsWith("\n") ? breaks : breaks + 1;
}
