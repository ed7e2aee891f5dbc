import type { z } from "zod";
import type { JsonSchema, MessageContent } from "../providers/types.js";
import type { RunSandbox } from "./sandbox/types.js";

export interface ToolContext {
  /** Absolute, real path of the directory file tools are confined to; exec's cwd. */
  workspaceDir: string;
  signal: AbortSignal;
  /**
   * The run's sandbox: exec runs its commands inside, the file tools resolve paths in its view. Absent: exec runs on
   * the host in `workspaceDir`, file tools are confined to it.
   */
  sandbox?: RunSandbox;
  /** Extra environment for exec (skills inject here). */
  env?: Record<string, string>;
  /** the model's id for this call; set by the loop */
  toolCallId?: string;
  /**
   * Asks whether exec may run `command` (tools.exec policy, approvals). Absent: exec runs it (a runtime always sets
   * it; a tool used on its own has no policy to apply).
   */
  approveExec?: (request: { command: string; toolCallId?: string; signal: AbortSignal }) => Promise<ExecVerdict>;
  /**
   * Asks an operator whether a tool that needs approval (an MCP server's `approval`) may run with these arguments;
   * the same approvals as exec's. Absent: such a tool refuses to run.
   */
  approveTool?: (request: {
    tool: string;
    args: Record<string, unknown>;
    toolCallId?: string;
    signal: AbortSignal;
  }) => Promise<ExecVerdict>;
  /** Streams a partial result (tool `update` event). */
  onUpdate?: (partial: string) => void;
  /** Delivers text to the user now (the `message` tool); absent where nobody can receive it. */
  sendMessage?: (text: string, toolCallId: string) => Promise<MessageDelivery>;
}

/** What became of a mid-run message: sent (maybe rewritten by message_sending), or not and why. */
export type MessageDelivery = { sent: true; text: string } | { sent: false; reason: string };

/** The answer to `approveExec`: run it, or refuse with a reason the model reads after "exec denied: ". */
export type ExecVerdict = { allowed: true } | { allowed: false; reason: string };

export interface ToolOutput {
  /**
   * What goes back to the model: text, or text and image parts (base64 images made by tools/image-prepare.ts, so
   * they are already within the size every provider takes).
   */
  content: MessageContent;
  isError?: boolean;
  /** Free-form metadata for events/logs; never sent to the model. */
  details?: Record<string, unknown>;
}

type ArgsSchema = z.ZodType<Record<string, unknown>>;

export interface Tool {
  name: string;
  description: string;
  /** what the model is told the arguments are; calls are validated against it (tools/validate.ts) */
  parameters: JsonSchema;
  /**
   * The zod schema `parameters` was derived from (tools declared with `defineTool`): calls are validated with it, and
   * `execute` gets its parsed output. Absent (plugin tools): calls are validated against `parameters` with ajv. A
   * function loads it: it returns the schema once loaded, a promise of it before (the built-ins, tools/define.ts).
   */
  argsSchema?: ArgsSchema | (() => ArgsSchema | Promise<ArgsSchema>);
  /**
   * Where the tool came from, as errors name it: "built-in", `plugin "<id>"`, `MCP server "<name>"`. Absent:
   * the embedding app passed it in.
   */
  source?: string;
  /**
   * "parallel" tools in one model turn run together; a "sequential" tool runs alone, so a steering message can
   * skip the calls after it. Read-only tools are parallel; tools with side effects are sequential.
   */
  concurrency: "parallel" | "sequential";
  /**
   * Called with arguments that passed validation. Throwing is fine: the loop turns it into an error result and the
   * run goes on.
   */
  execute(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutput>;
}

/** A failure the tool wants the model to see as a plain message (no stack). */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolError";
  }
}
