/**
 * Attachments on an incoming message, made ready before the message is accepted: an image is decoded and scaled
 * down now (tools/image-prepare.ts), so the durable queue row stores what the model will get (≤ 5 MiB, not the
 * 20 MiB original) and a crash or restart loses nothing; a UTF-8 text file is inlined into the message text, cut
 * at ATTACHMENT_LIMITS.maxTextChars with a line saying so. Anything else is refused with the attachment named.
 * The gateway passes its image-work limit (gateway.attachments.imageConcurrency), so a burst of decompression bombs
 * decodes a few at a time instead of all at once.
 */
import { ATTACHMENT_LIMITS } from "../protocol/limits.js";
import type { Attachment } from "../protocol/params.js";
import type { AgentRequest } from "../protocol/run.js";
import { RunParamError } from "../queue/errors.js";
import { formatBytes, prepareImage, sniffImageType } from "../tools/image-prepare.js";
import { ToolError } from "../tools/types.js";

/** Runs image work in turn with other callers (the gateway's global limit); unset, an image is prepared at once. */
export interface ImageWorkLimit {
  run<T>(work: () => Promise<T>): Promise<T>;
}

/** `req` with its text attachments inlined into `message` and its images prepared; without attachments, `req`. */
export async function prepareAttachments<R extends Pick<AgentRequest, "message" | "attachments">>(
  req: R,
  opts: { imageWork?: ImageWorkLimit } = {},
): Promise<R> {
  const list = req.attachments;
  if (!list || list.length === 0) return req;
  let message = req.message;
  const images: Attachment[] = [];
  for (const [i, attachment] of list.entries()) {
    const label = `attachments[${i}]${attachment.fileName ? ` (${attachment.fileName})` : ""}`;
    const bytes = Buffer.from(attachment.content, "base64");
    if (bytes.byteLength > ATTACHMENT_LIMITS.maxBytes) {
      throw new RunParamError(
        "attachments",
        `${label}: ${formatBytes(bytes.byteLength)} is over the ${formatBytes(ATTACHMENT_LIMITS.maxBytes)} an attachment may have`,
      );
    }
    if (sniffImageType(bytes)) {
      // decoding is where a small file can cost a gigabyte and seconds of libuv's threads: a few at a time
      const prepare = () => preparedImage(attachment, bytes, label);
      images.push(await (opts.imageWork ? opts.imageWork.run(prepare) : prepare()));
      continue;
    }
    const text = utf8Text(bytes);
    if (text === undefined) {
      const kind = attachment.mimeType ? `${attachment.mimeType} content` : "content";
      throw new RunParamError(
        "attachments",
        `${label}: ${kind} that is neither an image (PNG, JPEG, GIF, WebP) nor UTF-8 text cannot be attached`,
      );
    }
    message += inlinedText(attachment.fileName ?? `attachment ${i + 1}`, text);
  }
  return { ...req, message, attachments: images.length > 0 ? images : undefined };
}

async function preparedImage(attachment: Attachment, bytes: Buffer, label: string): Promise<Attachment> {
  try {
    const { block } = await prepareImage(bytes, label);
    return {
      type: "image",
      mimeType: block.mimeType,
      ...(attachment.fileName !== undefined ? { fileName: attachment.fileName } : {}),
      content: block.data,
      width: block.width,
      height: block.height,
    };
  } catch (err) {
    if (err instanceof ToolError) throw new RunParamError("attachments", err.message);
    throw err;
  }
}

function utf8Text(bytes: Buffer): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

function inlinedText(name: string, text: string): string {
  const max = ATTACHMENT_LIMITS.maxTextChars;
  if (text.length <= max) return `\n\n[attached file: ${name}]\n${text}`;
  return `\n\n[attached file: ${name}, cut: the first ${max} of ${text.length} characters]\n${text.slice(0, max)}\n[attachment cut here]`;
}
