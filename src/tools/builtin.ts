import { createEditTool } from "./edit.js";
import { createExecTool, type ExecToolOptions } from "./exec.js";
import { createReadTool } from "./read.js";
import type { Tool } from "./types.js";
import { createWriteTool } from "./write.js";

export interface BuiltinToolOptions {
  exec?: ExecToolOptions;
}

/** The file and shell tools every agent gets: read, write, edit, exec. */
export function createBuiltinTools(options: BuiltinToolOptions = {}): Tool[] {
  return [createReadTool(), createWriteTool(), createEditTool(), createExecTool(options.exec)];
}
