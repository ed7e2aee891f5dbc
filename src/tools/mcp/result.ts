import type { CallToolResult } from "@modelcontextprotocol/client";
import type { MessagePart } from "../../providers/types.js";
import { describePrepared, prepareImage } from "../image-prepare.js";
import type { ToolOutput } from "../types.js";

/**
 * An MCP tool result as a Loopgate tool output. Text parts are joined; an image goes through the `read` tool's path
 * (image-prepare.ts: sniffed, downscaled, a line saying what it was), so events show it as an omitted image, never
 * its base64; audio and embedded binary resources become a note, since no model here takes them from a tool.
 * `isError: true` is a tool error the model sees. `structuredContent` is kept in `details`; when the server sent
 * no content at all, its JSON is the text, so the model still sees the answer.
 */
export async function toToolOutput(exposedName: string, result: CallToolResult): Promise<ToolOutput> {
  const parts: MessagePart[] = [];
  let images = 0;
  const text = (t: string) => parts.push({ type: "text", text: t });
  for (const block of result.content ?? []) {
    switch (block.type) {
      case "text":
        text(block.text);
        break;
      case "image": {
        const label = `${exposedName} image ${++images}`;
        try {
          const prepared = await prepareImage(Buffer.from(block.data, "base64"), label);
          text(`${label}: ${describePrepared(prepared)}`);
          parts.push(prepared.block);
        } catch (err) {
          text(`[${label} not shown: ${(err as Error).message}]`);
        }
        break;
      }
      case "audio":
        text(`[audio ${block.mimeType} not shown]`);
        break;
      case "resource_link":
        text(`[resource ${block.uri}${block.name ? ` (${block.name})` : ""}]`);
        break;
      case "resource": {
        const res = block.resource;
        if ("text" in res && typeof res.text === "string") text(res.text);
        else text(`[resource ${res.uri}${res.mimeType ? ` ${res.mimeType}` : ""} not shown]`);
        break;
      }
      default:
        text(`[${(block as { type: string }).type} content not shown]`);
    }
  }
  const structured = result.structuredContent;
  if (parts.length === 0 && structured !== undefined) text(JSON.stringify(structured));
  const onlyText = parts.every((p) => p.type === "text");
  const content = onlyText ? parts.map((p) => (p as { text: string }).text).join("\n") : parts;
  return {
    content,
    ...(result.isError === true ? { isError: true } : {}),
    details: { mcp: true, ...(structured !== undefined ? { structuredContent: structured } : {}) },
  };
}
