import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { ATTACHMENT_LIMITS } from "../protocol/limits.js";
import { attachmentSchema } from "../protocol/params.js";
import { RunParamError } from "../queue/errors.js";
import { attachmentImages } from "../queue/user-content.js";
import { prepareAttachments } from "./attachments.js";

const b64 = (data: string | Buffer) => Buffer.from(data).toString("base64");

describe("prepareAttachments", () => {
  it("scales an image attachment to 1200 px before it is accepted, and keeps its name", async () => {
    const png = await sharp({ create: { width: 4000, height: 3000, channels: 3, background: "#808080" } })
      .png()
      .toBuffer();
    const req = await prepareAttachments({
      message: "look",
      attachments: [{ fileName: "shot.png", content: b64(png) }],
    });
    expect(req.message).toBe("look");
    expect(req.attachments).toEqual([
      expect.objectContaining({ type: "image", mimeType: "image/png", fileName: "shot.png", width: 1200, height: 900 }),
    ]);
    const [image] = attachmentImages(req);
    const meta = await sharp(Buffer.from(image?.data ?? "", "base64")).metadata();
    expect([meta.width, meta.height]).toEqual([1200, 900]);
  });

  it("inlines a text file into the message, and says where a long one was cut", async () => {
    const long = "x".repeat(ATTACHMENT_LIMITS.maxTextChars + 5);
    const req = await prepareAttachments({
      message: "read these",
      attachments: [
        { fileName: "notes.txt", mimeType: "text/plain", content: b64("line one\nline two") },
        { fileName: "big.log", content: b64(long) },
      ],
    });
    expect(req.attachments).toBeUndefined();
    expect(req.message).toBe(
      `read these\n\n[attached file: notes.txt]\nline one\nline two` +
        `\n\n[attached file: big.log, cut: the first ${ATTACHMENT_LIMITS.maxTextChars} of ${long.length} characters]\n` +
        `${"x".repeat(ATTACHMENT_LIMITS.maxTextChars)}\n[attachment cut here]`,
    );
  });

  it("refuses binary content and an undecodable image, naming the attachment", async () => {
    const binary = prepareAttachments({
      message: "m",
      attachments: [
        { fileName: "song.mp3", mimeType: "audio/mpeg", content: b64(Buffer.from([0x49, 0x44, 0x33, 0, 1])) },
      ],
    });
    await expect(binary).rejects.toBeInstanceOf(RunParamError);
    await expect(binary).rejects.toThrow(
      "attachments[0] (song.mp3): audio/mpeg content that is neither an image (PNG, JPEG, GIF, WebP) nor UTF-8 text cannot be attached",
    );
    const broken = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(32, 1)]);
    await expect(
      prepareAttachments({
        message: "m",
        attachments: [{ content: b64("ok"), fileName: "a.txt" }, { content: b64(broken) }],
      }),
    ).rejects.toThrow(/^attachments\[1\]: cannot decode image\/jpeg image \(/);
  });

  it("the wire schema refuses content that is not base64", () => {
    const parsed = attachmentSchema.safeParse({ content: "not base64!" });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toBe("expected base64 content");
  });
});
