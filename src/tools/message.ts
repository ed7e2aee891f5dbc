import type { JsonSchema } from "../providers/types.js";
import type { ArgsOf } from "./builtin-args.js";
import { defineTool } from "./define.js";
import type { Tool, ToolContext, ToolOutput } from "./types.js";
import { ToolError } from "./types.js";

/**
 * `message`: the model sends text to the user in the middle of a run (a progress note, a question before a long
 * job). Delivery is the run's business (hooks, events, dedupe of the final reply), reached through the
 * `sendMessage` port of the tool context; a context without one (a bare loop in a test) cannot deliver.
 */
/** `messageArgs` of tools/builtin-args.ts as JSON Schema, written out (tools/define.ts says why). */
export const messageParameters: JsonSchema = {
  type: "object",
  properties: { text: { type: "string", description: "The message text" } },
  required: ["text"],
  additionalProperties: false,
};

export function createMessageTool(): Tool {
  return defineTool({
    name: "message",
    description:
      "Send a message to the user now, while you keep working. Do not repeat a message you sent in your final answer.",
    args: () => import("./builtin-args.js").then((m) => m.messageArgs()),
    parameters: messageParameters,
    // a message is a side effect the user sees: never reordered with other calls
    concurrency: "sequential",
    execute: runMessage,
  });
}

async function runMessage({ text }: ArgsOf<"messageArgs">, ctx: ToolContext): Promise<ToolOutput> {
  if (!text.trim()) throw new ToolError("message: text is empty; nothing was sent");
  if (!ctx.sendMessage) throw new ToolError("message: this run cannot deliver messages");
  const outcome = await ctx.sendMessage(text, ctx.toolCallId ?? "");
  if (!outcome.sent) return { content: `not sent: ${outcome.reason}`, isError: true };
  return { content: "sent", details: { chars: outcome.text.length } };
}
