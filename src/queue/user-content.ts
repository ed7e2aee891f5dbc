/**
 * A user message's content from an accepted request: its text, then the images of its attachments (prepared at
 * accept time by agent/attachments.ts, so each is already within the size a model takes).
 */
import type { AgentRequest } from "../protocol/run.js";
import type { ImageBlock, MessageContent } from "../providers/types.js";

/** The image parts a request's attachments stand for. */
export function attachmentImages(req: Pick<AgentRequest, "attachments">): ImageBlock[] {
  return (req.attachments ?? []).flatMap((a): ImageBlock[] =>
    a.mimeType?.startsWith("image/")
      ? [
          {
            type: "image",
            mimeType: a.mimeType,
            data: a.content,
            ...(a.width !== undefined ? { width: a.width } : {}),
            ...(a.height !== undefined ? { height: a.height } : {}),
          },
        ]
      : [],
  );
}

/** The text alone, or the text followed by the images. */
export function userContent(text: string, images: readonly ImageBlock[]): MessageContent {
  return images.length === 0 ? text : [{ type: "text", text }, ...images];
}
