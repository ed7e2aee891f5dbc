import type { ToolSpec } from "../providers/types.js";
import type { Tool } from "./types.js";
import { prepareToolValidation } from "./validate.js";

/** Provider APIs accept only this for tool names (OpenAI and Anthropic agree on it). */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Tools by name, in registration order (the order the model sees them in). Registering checks what would otherwise
 * fail later and far from its cause: a name providers refuse, a name already taken (the error names both tools'
 * sources), a malformed tool, a JSON Schema ajv cannot compile.
 */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();

  constructor(tools: Iterable<Tool> = []) {
    for (const tool of tools) this.register(tool);
  }

  /** Adds the tool, or throws saying why not; returns a function that removes it again. */
  register(tool: Tool): () => void {
    if (typeof tool.name !== "string" || !TOOL_NAME.test(tool.name)) {
      throw new Error(
        `tool name ${JSON.stringify(tool.name)}${fromSource(tool)} is invalid: use 1-64 letters, digits, "_" or "-"`,
      );
    }
    const existing = this.tools.get(tool.name);
    if (existing) throw new Error(`${describeTool(tool)} clashes with ${describeTool(existing)}`);
    if (typeof tool.execute !== "function") throw new Error(`${describeTool(tool)} has no execute function`);
    if (tool.parameters === null || typeof tool.parameters !== "object" || Array.isArray(tool.parameters)) {
      throw new Error(`${describeTool(tool)} has no parameters schema (a JSON Schema object)`);
    }
    prepareToolValidation(tool);
    this.tools.set(tool.name, tool);
    return () => {
      if (this.tools.get(tool.name) === tool) this.tools.delete(tool.name);
    };
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  list(): Tool[] {
    return [...this.tools.values()];
  }

  /** The live map (callers read it; only `register` changes it). */
  get byName(): ReadonlyMap<string, Tool> {
    return this.tools;
  }

  /** What goes into a model request: only name, description and parameters, never the implementation. */
  specs(): ToolSpec[] {
    return this.list().map(({ name, description, parameters }) => ({ name, description, parameters }));
  }
}

/** `the built-in tool "read"`, `tool "read" from plugin "foo"`, or `tool "read"` when its source is unknown. */
function describeTool(tool: Tool): string {
  if (tool.source === "built-in") return `the built-in tool "${tool.name}"`;
  return `tool "${tool.name}"${fromSource(tool)}`;
}

function fromSource(tool: Tool): string {
  if (!tool.source) return "";
  return tool.source === "built-in" ? " (built-in)" : ` from ${tool.source}`;
}
