/**
 * Getting an image ready for a model: every provider limits an image's size (Anthropic: 5 MB and about 1,568 px on
 * the longest side before it scales down itself; OpenAI: 20 MB), and a larger image only costs tokens and time. So
 * an image is downscaled to a longest side of at most 1,200 px and at most 5 MiB before it enters the context,
 * keeping PNG when that is small enough and re-encoding as JPEG down a quality ladder when not.
 *
 * sharp (libvips) is loaded on the first image only, so a CLI start that sends no image does not pay for it.
 */
import type { ImageBlock } from "../providers/types.js";
import { ToolError } from "./types.js";

export const IMAGE_MAX_SIDE = 1200;
export const IMAGE_MAX_BYTES = 5 * 1024 * 1024;
/** The JPEG qualities tried in order when the image is still too large. */
export const JPEG_QUALITY_LADDER = [85, 70, 55, 40] as const;
/** Input larger than this is refused before decoding: a decompression bomb or a file that is not a photo. */
export const IMAGE_MAX_INPUT_BYTES = 50 * 1024 * 1024;
/** libvips refuses to decode more pixels than this (about 16k × 16k). */
const MAX_INPUT_PIXELS = 268_402_689;

export type ImageMimeType = "image/png" | "image/jpeg" | "image/gif" | "image/webp";

/** The image type of `bytes` by its magic number, or undefined when it is none of the four every provider takes. */
export function sniffImageType(bytes: Uint8Array): ImageMimeType | undefined {
  const starts = (...sig: number[]) => bytes.length >= sig.length && sig.every((b, i) => bytes[i] === b);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x47, 0x49, 0x46, 0x38)) return "image/gif";
  const ascii = (from: number, to: number) => Buffer.from(bytes.subarray(from, to)).toString("latin1");
  if (bytes.length >= 12 && ascii(0, 4) === "RIFF" && ascii(8, 12) === "WEBP") return "image/webp";
  return undefined;
}

export interface PreparedImage {
  /** what goes into the message: base64 data plus its type and final size */
  block: ImageBlock & { data: string; bytes: number; width: number; height: number };
  /** the input's type and size, for the one-line description */
  original: { mimeType: ImageMimeType; width: number; height: number; bytes: number };
}

export interface PrepareLimits {
  maxSide?: number;
  maxBytes?: number;
}

type Sharp = typeof import("sharp").default;
let sharpModule: Promise<Sharp> | undefined;

function loadSharp(): Promise<Sharp> {
  sharpModule ??= import("sharp").then((m) => m.default);
  return sharpModule;
}

/**
 * Decodes `input` (named `label` in errors), downscales and re-encodes it within the limits. Throws a ToolError
 * saying what was wrong: not an image, an image it cannot decode, or one it cannot bring under the byte limit.
 */
export async function prepareImage(
  input: Uint8Array,
  label: string,
  limits: PrepareLimits = {},
): Promise<PreparedImage> {
  const maxSide = limits.maxSide ?? IMAGE_MAX_SIDE;
  const maxBytes = limits.maxBytes ?? IMAGE_MAX_BYTES;
  const mimeType = sniffImageType(input);
  if (!mimeType) throw new ToolError(`${label}: not a PNG, JPEG, GIF or WebP image`);
  if (input.byteLength > IMAGE_MAX_INPUT_BYTES) {
    throw new ToolError(
      `${label}: image file is ${formatBytes(input.byteLength)}, over the ${formatBytes(IMAGE_MAX_INPUT_BYTES)} an image may have before it is scaled`,
    );
  }
  const sharp = await loadSharp();
  const source = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  let width: number;
  let height: number;
  let oriented: boolean;
  try {
    // First frame only (an animated GIF becomes its first picture); EXIF orientation is applied before measuring.
    const meta = await sharp(source, { limitInputPixels: MAX_INPUT_PIXELS }).metadata();
    if (!meta.width || !meta.height) throw new Error("no dimensions");
    oriented = (meta.orientation ?? 1) !== 1;
    const rotated = (meta.orientation ?? 1) >= 5;
    width = rotated ? meta.height : meta.width;
    height = rotated ? meta.width : meta.height;
  } catch (err) {
    throw new ToolError(`${label}: cannot decode ${mimeType} image (${decodeProblem(err)})`);
  }
  const original = { mimeType, width, height, bytes: input.byteLength };

  const scale = Math.min(1, maxSide / Math.max(width, height));
  const outWidth = Math.max(1, Math.round(width * scale));
  const outHeight = Math.max(1, Math.round(height * scale));
  // an EXIF-rotated photo is re-encoded upright: not every provider applies the orientation tag
  const fitsAsIs = scale === 1 && input.byteLength <= maxBytes && !oriented;

  try {
    if (fitsAsIs && (mimeType === "image/png" || mimeType === "image/jpeg" || mimeType === "image/webp")) {
      // Small enough already: sent byte for byte, so nothing is lost to a re-encode.
      return done(source, mimeType, width, height, original);
    }
    const resized = () =>
      sharp(source, { limitInputPixels: MAX_INPUT_PIXELS }).rotate().resize(outWidth, outHeight, { fit: "fill" });
    // A screenshot or diagram stays PNG when that is small enough (JPEG smears text); a GIF becomes PNG, since
    // animation is not sent anyway.
    if (mimeType !== "image/jpeg") {
      const png = await resized().png({ compressionLevel: 9 }).toBuffer();
      if (png.byteLength <= maxBytes) return done(png, "image/png", outWidth, outHeight, original);
    }
    for (const quality of JPEG_QUALITY_LADDER) {
      // JPEG has no alpha: transparent areas become white, as on most viewers' backgrounds
      const jpeg = await resized().flatten({ background: "#ffffff" }).jpeg({ quality, mozjpeg: true }).toBuffer();
      if (jpeg.byteLength <= maxBytes) return done(jpeg, "image/jpeg", outWidth, outHeight, original);
    }
  } catch (err) {
    throw new ToolError(`${label}: cannot decode ${mimeType} image (${decodeProblem(err)})`);
  }
  throw new ToolError(
    `${label}: image stays over ${formatBytes(maxBytes)} even as JPEG at quality ${JPEG_QUALITY_LADDER.at(-1)} and ${outWidth}×${outHeight} px`,
  );
}

function done(
  bytes: Buffer,
  mimeType: ImageMimeType,
  width: number,
  height: number,
  original: PreparedImage["original"],
): PreparedImage {
  return {
    block: { type: "image", mimeType, data: bytes.toString("base64"), bytes: bytes.byteLength, width, height },
    original,
  };
}

/** "image/png 4000×3000 → sent as 1200×900" (or "sent as is"): the short line the model reads next to the image. */
export function describePrepared(prepared: PreparedImage): string {
  const { original, block } = prepared;
  const from = `${original.mimeType} ${original.width}×${original.height}`;
  const unchanged =
    block.mimeType === original.mimeType &&
    block.width === original.width &&
    block.height === original.height &&
    block.bytes === original.bytes;
  if (unchanged) return `${from}, ${formatBytes(block.bytes)}`;
  const type = block.mimeType === original.mimeType ? "" : ` ${block.mimeType}`;
  return `${from} → sent as${type} ${block.width}×${block.height}, ${formatBytes(block.bytes)}`;
}

function decodeProblem(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  // libvips messages can run over several lines; the first says what went wrong
  return message.split("\n")[0]?.trim().replace(/:$/, "") || "unknown error";
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
