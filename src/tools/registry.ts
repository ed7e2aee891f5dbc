import type { ToolSpec } from "../providers/types.js";
import type { Tool } from "./types.js";

/** Provider APIs accept only this for tool names (OpenAI and Anthropic agree on it). */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** The tools one agent may call, by name, in registration order (which is the order the model sees them in). */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();

  constructor(tools: Iterable<Tool> = []) {
    for (const tool of tools) this.register(tool);
  }

  register(tool: Tool): this {
    if (!TOOL_NAME.test(tool.name)) {
      throw new Error(`tool name ${JSON.stringify(tool.name)} is invalid: use 1-64 letters, digits, "_" or "-"`);
    }
    if (this.tools.has(tool.name)) throw new Error(`tool "${tool.name}" is already registered`);
    this.tools.set(tool.name, tool);
    return this;
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

  /** What goes into a model request: only name, description and parameters, never the implementation. */
  specs(): ToolSpec[] {
    return this.list().map(({ name, description, parameters }) => ({ name, description, parameters }));
  }
}
