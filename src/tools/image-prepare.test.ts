import { randomBytes } from "node:crypto";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import {
  describePrepared,
  IMAGE_MAX_BYTES,
  IMAGE_MAX_INPUT_BYTES,
  prepareImage,
  sniffImageType,
} from "./image-prepare.js";
import { ToolError } from "./types.js";

function solid(width: number, height: number) {
  return sharp({ create: { width, height, channels: 3, background: "#204080" } });
}

/** Random pixels: a PNG of them does not compress (about width × height × 3 bytes); a JPEG gets 5–15× smaller. */
function noise(width: number, height: number) {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } });
}

async function decoded(data: string) {
  return sharp(Buffer.from(data, "base64")).metadata();
}

describe("prepareImage", () => {
  it("decodes a PNG (sharp's prebuilt binary loads on this Node)", async () => {
    const png = await solid(40, 30).png().toBuffer();
    const prepared = await prepareImage(png, "a.png");
    expect(prepared.original).toEqual({ mimeType: "image/png", width: 40, height: 30, bytes: png.byteLength });
    expect(prepared.block.data).toBe(png.toString("base64"));
    expect(describePrepared(prepared)).toMatch(/^image\/png 40×30, \d+ B$/);
  });

  it("scales the longest side down to 1200 px, keeping the aspect ratio and PNG when it fits", async () => {
    const prepared = await prepareImage(await solid(3000, 4000).png().toBuffer(), "tall.png");
    expect(prepared.block).toMatchObject({ mimeType: "image/png", width: 900, height: 1200 });
    const meta = await decoded(prepared.block.data);
    expect([meta.format, meta.width, meta.height]).toEqual(["png", 900, 1200]);
    expect(describePrepared(prepared)).toMatch(/^image\/png 3000×4000 → sent as 900×1200, /);
  });

  it("re-encodes as JPEG down the quality ladder when the PNG stays over the byte limit", async () => {
    const png = await noise(600, 600).png().toBuffer();
    // the noisy PNG is about 1 MiB and its JPEG at quality 85 about 220 KiB; 150 kB needs a lower rung
    const prepared = await prepareImage(png, "noise.png", { maxBytes: 150_000 });
    expect(prepared.block.mimeType).toBe("image/jpeg");
    expect(prepared.block.bytes).toBeLessThanOrEqual(150_000);
    expect(prepared.block.bytes).toBeGreaterThan(50_000);
    expect(Buffer.from(prepared.block.data, "base64").byteLength).toBe(prepared.block.bytes);
    expect((await decoded(prepared.block.data)).format).toBe("jpeg");
    expect(describePrepared(prepared)).toMatch(/→ sent as image\/jpeg 600×600/);
  });

  it("keeps every result within the default limits", async () => {
    const prepared = await prepareImage(await noise(2000, 1500).png().toBuffer(), "big-noise.png");
    expect(prepared.block.bytes).toBeLessThanOrEqual(IMAGE_MAX_BYTES);
    expect(Math.max(prepared.block.width, prepared.block.height)).toBe(1200);
  });

  it("says so when even the lowest JPEG quality is over the limit", async () => {
    const png = await noise(300, 300).png().toBuffer();
    await expect(prepareImage(png, "noise.png", { maxBytes: 2_000 })).rejects.toThrow(
      /^noise\.png: image stays over 2\.0 KiB even as JPEG at quality 40 and 300×300 px$/,
    );
  });

  it("turns an animated GIF into a PNG of its first frame", async () => {
    const gif = await solid(50, 20).gif().toBuffer();
    const prepared = await prepareImage(gif, "a.gif");
    expect(prepared.block).toMatchObject({ mimeType: "image/png", width: 50, height: 20 });
  });

  it("refuses what is not an image, an image it cannot decode, and an oversized file, as ToolErrors", async () => {
    await expect(prepareImage(Buffer.from("hello"), "a.txt")).rejects.toThrow(
      new ToolError("a.txt: not a PNG, JPEG, GIF or WebP image"),
    );
    const truncated = (await solid(100, 100).jpeg().toBuffer()).subarray(0, 40);
    await expect(prepareImage(truncated, "cut.jpg")).rejects.toThrow(/^cut\.jpg: cannot decode image\/jpeg image \(/);
    const huge = Buffer.alloc(IMAGE_MAX_INPUT_BYTES + 1);
    Buffer.from([0xff, 0xd8, 0xff]).copy(huge);
    await expect(prepareImage(huge, "huge.jpg")).rejects.toThrow(
      /^huge\.jpg: image file is 50\.0 MiB, over the 50\.0 MiB/,
    );
  });
});

describe("sniffImageType", () => {
  it("knows the four image types by their magic bytes", async () => {
    expect(sniffImageType(await solid(2, 2).png().toBuffer())).toBe("image/png");
    expect(sniffImageType(await solid(2, 2).jpeg().toBuffer())).toBe("image/jpeg");
    expect(sniffImageType(await solid(2, 2).gif().toBuffer())).toBe("image/gif");
    expect(sniffImageType(await solid(2, 2).webp().toBuffer())).toBe("image/webp");
    expect(sniffImageType(Buffer.from("%PDF-1.7"))).toBeUndefined();
  });
});
