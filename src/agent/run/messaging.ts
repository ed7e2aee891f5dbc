import type { MessageDelivery } from "../../tools/types.js";
import type { RunEmitter } from "./events.js";
import type { RunPorts } from "./ports.js";

type HookCtx = { agentId: string; sessionKey: string; runId: string };

/**
 * The outbound path of one message the model sends mid-run (the `message` tool), the same as a final payload's:
 * message_sending may rewrite or cancel it (cancel is terminal), then it goes out as a `message` event (chat
 * clients get it as a chat message), and message_sent observers and the internal message:sent hook see it.
 */
export async function deliverToolMessage(
  rt: RunPorts,
  events: RunEmitter,
  ctx: HookCtx,
  text: string,
  toolCallId: string,
): Promise<MessageDelivery> {
  const hooks = rt.pluginHooks;
  let content = text;
  if (hooks.has("message_sending")) {
    const d = await hooks.runMessageSending({ content }, ctx);
    if (d.cancel) return { sent: false, reason: "a plugin cancelled the message (message_sending)" };
    content = d.content;
  }
  if (!content.trim()) return { sent: false, reason: "the message was empty after message_sending" };
  events.emit("message", { text: content, toolCallId });
  if (hooks.has("message_sent")) void hooks.runObservers("message_sent", { content, success: true }, ctx);
  void rt.fireInternal("message", "sent", { ...ctx, content });
  return { sent: true, text: content };
}
