import { createReadStream } from "node:fs";
import { open, readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";
import type { JsonSchema } from "../providers/types.js";
import type { ArgsOf } from "./builtin-args.js";
import { defineTool } from "./define.js";
import { describePrepared, prepareImage } from "./image-prepare.js";
import { resolveToolPath } from "./tool-path.js";
import type { Tool, ToolContext, ToolOutput } from "./types.js";
import { ToolError } from "./types.js";

export const READ_DEFAULT_LIMIT = 2000;
export const READ_MAX_LINE_CHARS = 2000;
/** A page stops early past this many chars, so 2000 long lines cannot flood the context. */
export const READ_MAX_PAGE_CHARS = 50000;
const MAX_DIR_ENTRIES = 1000;
const SNIFF_BYTES = 8192;

/** `readArgs` of tools/builtin-args.ts as JSON Schema, written out (tools/define.ts says why). */
export const readParameters: JsonSchema = {
  type: "object",
  properties: {
    path: { type: "string", description: "Path relative to the workspace" },
    offset: { description: "1-based line to start at", type: "integer", minimum: 1 },
    limit: { description: `Max lines (default ${READ_DEFAULT_LIMIT})`, type: "integer", minimum: 1 },
  },
  required: ["path"],
  additionalProperties: false,
};

export function createReadTool(): Tool {
  return defineTool({
    name: "read",
    description: `Read a text file or list a directory in the workspace. Returns up to ${READ_DEFAULT_LIMIT} lines; page with offset/limit. PNG, JPEG, GIF and WebP images are returned as images (scaled to at most 1200 px).`,
    args: () => import("./builtin-args.js").then((m) => m.readArgs(READ_DEFAULT_LIMIT)),
    parameters: readParameters,
    concurrency: "parallel",
    execute: runRead,
  });
}

async function runRead(args: ArgsOf<"readArgs">, ctx: ToolContext): Promise<ToolOutput> {
  const userPath = args.path;
  const offset = args.offset ?? 1;
  const limit = args.limit ?? READ_DEFAULT_LIMIT;
  const target = await resolveToolPath(ctx, userPath);

  const info = await stat(target).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT" || err.code === "ENOTDIR") throw new ToolError(`file not found: ${userPath}`);
    throw new ToolError(`cannot read ${userPath}: ${err.message}`);
  });
  if (info.isDirectory()) return listDirectory(target, userPath);
  if (!info.isFile()) throw new ToolError(`cannot read ${userPath}: not a regular file`);

  const binary = await sniffBinary(target, info.size);
  if (binary && IMAGE_KINDS.has(binary)) return readImage(target, userPath);
  if (binary) {
    return {
      content: `${userPath}: binary file (${binary}, ${info.size} bytes); not shown`,
      details: { binary: true },
    };
  }
  return readLines(target, userPath, offset, limit);
}

const IMAGE_KINDS = new Set(["PNG image", "JPEG image", "GIF image", "WebP image"]);

/**
 * An image (known by its magic bytes, whatever its name) goes to the model as an image part, downscaled, with a line
 * saying what it was and what was sent. One that cannot be decoded or brought under the size limit is a ToolError.
 */
async function readImage(file: string, userPath: string): Promise<ToolOutput> {
  const bytes = await readFile(file);
  const prepared = await prepareImage(bytes, userPath);
  return {
    content: [{ type: "text", text: `${userPath}: ${describePrepared(prepared)}` }, prepared.block],
    details: {
      image: { mimeType: prepared.block.mimeType, width: prepared.block.width, height: prepared.block.height },
    },
  };
}

async function listDirectory(dir: string, userPath: string): Promise<ToolOutput> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = await Promise.all(
    entries.map(async (entry) => {
      let isDir = entry.isDirectory();
      // A symlink to a directory is listed as a directory, since reading it works like one.
      if (entry.isSymbolicLink())
        isDir = (await stat(path.join(dir, entry.name)).catch(() => undefined))?.isDirectory() ?? false;
      return isDir ? `${entry.name}/` : entry.name;
    }),
  );
  names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (names.length === 0) return { content: `${userPath}: empty directory`, details: { entries: 0 } };
  const shown = names.slice(0, MAX_DIR_ENTRIES);
  let content = shown.join("\n");
  if (names.length > shown.length) content += `\n[... ${names.length - shown.length} more entries]`;
  return { content, details: { entries: names.length } };
}

async function readLines(file: string, userPath: string, offset: number, limit: number): Promise<ToolOutput> {
  const lines: string[] = [];
  let pageChars = 0;
  let total = 0;
  let nextOffset: number | undefined;
  // Streamed line by line so a large log is paged without loading it whole; the scan continues to the end only
  // to count the lines left.
  const input = createReadStream(file, { encoding: "utf8" });
  const reader = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  try {
    for await (const raw of reader) {
      total++;
      if (total < offset || nextOffset !== undefined) continue;
      if (lines.length >= limit || pageChars >= READ_MAX_PAGE_CHARS) {
        nextOffset = total;
        continue;
      }
      const line =
        raw.length > READ_MAX_LINE_CHARS
          ? `${raw.slice(0, READ_MAX_LINE_CHARS)}… [line truncated, ${raw.length - READ_MAX_LINE_CHARS} more chars]`
          : raw;
      lines.push(line);
      pageChars += line.length + 1;
    }
  } finally {
    reader.close();
    input.destroy();
  }

  if (total === 0) return { content: `${userPath}: empty file`, details: { totalLines: 0 } };
  if (offset > total) {
    throw new ToolError(`offset ${offset} is past the end of ${userPath} (${total} lines)`);
  }
  let content = lines.join("\n");
  if (nextOffset !== undefined) {
    content += `\n\n[... ${total - nextOffset + 1} more lines; use offset=${nextOffset} to continue]`;
  }
  return { content, details: { totalLines: total, firstLine: offset, lines: lines.length } };
}

/** Returns a short description of the file's kind when it is not text, or undefined for text. */
async function sniffBinary(file: string, size: number): Promise<string | undefined> {
  if (size === 0) return undefined;
  const handle = await open(file, "r");
  try {
    const buf = Buffer.alloc(Math.min(SNIFF_BYTES, size));
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    const sample = buf.subarray(0, bytesRead);
    const known = magicKind(sample);
    if (known) return known;
    if (sample.includes(0)) return "binary data";
    try {
      // stream: true lets a multi-byte character cut by the sample boundary pass.
      new TextDecoder("utf-8", { fatal: true }).decode(sample, { stream: true });
    } catch {
      return "not UTF-8 text";
    }
    return undefined;
  } finally {
    await handle.close();
  }
}

const MAGIC: Array<[number[], string]> = [
  [[0x89, 0x50, 0x4e, 0x47], "PNG image"],
  [[0xff, 0xd8, 0xff], "JPEG image"],
  [[0x47, 0x49, 0x46, 0x38], "GIF image"],
  [[0x25, 0x50, 0x44, 0x46], "PDF document"],
  [[0x50, 0x4b, 0x03, 0x04], "ZIP archive"],
  [[0x1f, 0x8b], "gzip archive"],
  [[0x7f, 0x45, 0x4c, 0x46], "ELF executable"],
  [[0x00, 0x61, 0x73, 0x6d], "WebAssembly module"],
];

function magicKind(sample: Buffer): string | undefined {
  for (const [bytes, kind] of MAGIC) {
    if (sample.length >= bytes.length && bytes.every((b, i) => sample[i] === b)) return kind;
  }
  if (
    sample.length >= 12 &&
    sample.toString("latin1", 0, 4) === "RIFF" &&
    sample.toString("latin1", 8, 12) === "WEBP"
  ) {
    return "WebP image";
  }
  return undefined;
}
