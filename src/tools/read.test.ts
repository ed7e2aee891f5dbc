import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import sharp from "sharp";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { contentImages, contentText } from "../providers/types.js";
import { createReadTool } from "./read.js";
import { makeSandbox, type Sandbox } from "./test-helpers.js";
import { ToolError } from "./types.js";
import { checkToolArgs } from "./validate.js";

const read = createReadTool();
let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
});
afterEach(() => sb.cleanup());

function numbered(count: number): string {
  return Array.from({ length: count }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
}

describe("read", () => {
  it("returns a small file's text", async () => {
    await writeFile(path.join(sb.ws, "a.txt"), "hello\nworld\n");
    const out = await read.execute({ path: "a.txt" }, sb.ctx());
    expect(out.content).toBe("hello\nworld");
    expect(out.isError).toBeFalsy();
  });

  it("pages with offset and limit and says where to continue", async () => {
    await writeFile(path.join(sb.ws, "n.txt"), numbered(10));
    const out = await read.execute({ path: "n.txt", offset: 3, limit: 4 }, sb.ctx());
    expect(out.content).toBe("line 3\nline 4\nline 5\nline 6\n\n[... 4 more lines; use offset=7 to continue]");
    const last = await read.execute({ path: "n.txt", offset: 7 }, sb.ctx());
    expect(last.content).toBe("line 7\nline 8\nline 9\nline 10");
  });

  it("stops at 2000 lines by default", async () => {
    await writeFile(path.join(sb.ws, "big.txt"), numbered(2500));
    const out = await read.execute({ path: "big.txt" }, sb.ctx());
    expect(out.content).toContain("line 2000\n");
    expect(out.content).not.toContain("line 2001\n");
    expect(out.content).toMatch(/\[\.\.\. 500 more lines; use offset=2001 to continue\]$/);
  });

  it("caps a very long line and says how much was cut", async () => {
    await writeFile(path.join(sb.ws, "long.txt"), "x".repeat(5000));
    const out = await read.execute({ path: "long.txt" }, sb.ctx());
    expect(out.content).toBe(`${"x".repeat(2000)}… [line truncated, 3000 more chars]`);
  });

  it("reports an offset past the end", async () => {
    await writeFile(path.join(sb.ws, "n.txt"), numbered(3));
    await expect(read.execute({ path: "n.txt", offset: 9 }, sb.ctx())).rejects.toThrow(
      "offset 9 is past the end of n.txt (3 lines)",
    );
  });

  it("lists a directory with subdirectories marked by a trailing slash", async () => {
    await mkdir(path.join(sb.ws, "src"));
    await writeFile(path.join(sb.ws, "README.md"), "");
    await symlink("src", path.join(sb.ws, "lib"));
    const out = await read.execute({ path: "." }, sb.ctx());
    expect(out.content).toBe("README.md\nlib/\nsrc/");
  });

  it("describes a binary file instead of dumping its bytes", async () => {
    await writeFile(path.join(sb.ws, "doc.pdf"), Buffer.from("%PDF-1.7\n\0\0binary"));
    await writeFile(path.join(sb.ws, "blob.bin"), Buffer.from([1, 2, 0, 3, 0xff]));
    expect((await read.execute({ path: "doc.pdf" }, sb.ctx())).content).toBe(
      "doc.pdf: binary file (PDF document, 17 bytes); not shown",
    );
    expect((await read.execute({ path: "blob.bin" }, sb.ctx())).content).toMatch(
      /binary file \(binary data, 5 bytes\)/,
    );
  });

  it("says the file was not found", async () => {
    await expect(read.execute({ path: "nope.txt" }, sb.ctx())).rejects.toThrow("file not found: nope.txt");
  });

  it("refuses to read outside the workspace", async () => {
    await writeFile(path.join(sb.outside, "secret.txt"), "s");
    await expect(read.execute({ path: "../outside/secret.txt" }, sb.ctx())).rejects.toThrow(/outside the workspace/);
  });

  it("a call with a wrong type, a missing path or an out-of-range page is refused, naming the field", async () => {
    const refused = async (args: unknown) => {
      const check = await checkToolArgs(read, args);
      return check.ok ? "accepted" : check.error;
    };
    expect(await refused({ path: 42 })).toBe("invalid arguments for read: path: expected string, got number");
    expect(await refused({})).toBe("invalid arguments for read: path: is required");
    expect(await refused({ path: "a", offset: 0 })).toBe("invalid arguments for read: offset: must be >= 1");
    expect(await refused({ path: "a", limit: 2.5 })).toBe(
      "invalid arguments for read: limit: expected integer, got number",
    );
    expect(await refused({ path: "a", offset: null })).toBe("accepted");
  });

  describe("images", () => {
    it("returns a large PNG as an image part scaled to 1200 px, with a line saying what was sent", async () => {
      const png = await sharp({ create: { width: 4000, height: 3000, channels: 3, background: "#3366cc" } })
        .png()
        .toBuffer();
      await writeFile(path.join(sb.ws, "shot.png"), png);
      const out = await read.execute({ path: "shot.png" }, sb.ctx());
      expect(contentText(out.content)).toMatch(/^shot\.png: image\/png 4000×3000 → sent as 1200×900, [\d.]+ KiB$/);
      const [image] = contentImages(out.content);
      expect(image).toMatchObject({ type: "image", mimeType: "image/png", width: 1200, height: 900 });
      const meta = await sharp(Buffer.from(image?.data ?? "", "base64")).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(["png", 1200, 900]);
    });

    it("knows an image by its bytes, not its name", async () => {
      const jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: "#ff0000" } })
        .jpeg()
        .toBuffer();
      await writeFile(path.join(sb.ws, "photo.txt"), jpeg);
      const out = await read.execute({ path: "photo.txt" }, sb.ctx());
      const [image] = contentImages(out.content);
      expect(image).toMatchObject({ mimeType: "image/jpeg", width: 64, height: 48 });
      // small enough: sent byte for byte
      expect(image?.data).toBe(jpeg.toString("base64"));
    });

    it("gives a clear tool error for a file that looks like a PNG but cannot be decoded", async () => {
      const broken = Buffer.concat([
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
        Buffer.alloc(64, 7),
      ]);
      await writeFile(path.join(sb.ws, "broken.png"), broken);
      const err = await read.execute({ path: "broken.png" }, sb.ctx()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ToolError);
      expect((err as Error).message).toMatch(/^broken\.png: cannot decode image\/png image \(.+\)$/);
    });
  });
});
