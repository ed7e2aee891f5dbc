import { createEditTool } from "./edit.js";
import { createExecTool, type ExecToolOptions } from "./exec.js";
import { createMessageTool } from "./message.js";
import { createReadTool } from "./read.js";
import type { Tool } from "./types.js";
import { createWriteTool } from "./write.js";

export interface BuiltinToolOptions {
  exec?: ExecToolOptions;
}

/** The tools every agent gets: read, write, edit, exec, and message (text to the user in the middle of a run). */
export function createBuiltinTools(options: BuiltinToolOptions = {}): Tool[] {
  const tools = [
    createReadTool(),
    createWriteTool(),
    createEditTool(),
    createExecTool(options.exec),
    createMessageTool(),
  ];
  return tools.map((tool) => ({ ...tool, source: "built-in" }));
}
