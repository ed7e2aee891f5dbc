import { readFile } from "node:fs/promises";
import path from "node:path";

/** Load order is prompt order: instructions and personality first, memory last. */
export const BOOTSTRAP_FILE_NAMES = [
  "AGENTS.md",
  "SOUL.md",
  "TOOLS.md",
  "IDENTITY.md",
  "USER.md",
  "HEARTBEAT.md",
  "BOOTSTRAP.md",
  "MEMORY.md",
] as const;

export const DEFAULT_PER_FILE_MAX_CHARS = 20_000;
export const DEFAULT_TOTAL_MAX_CHARS = 60_000;

/**
 * Below this many chars of remaining total budget a file is listed as omitted instead of cut: a few dozen chars
 * of head and tail cannot guide the model, while the omission note still tells it the file exists.
 */
const MIN_USEFUL_CHARS = 200;

/**
 * A plain object on purpose: the `agent:bootstrap` hook receives the array and may push, remove or edit entries
 * before the system prompt is built, so nothing here may depend on identity or hidden state.
 */
export interface BootstrapFile {
  name: string;
  /** Absolute path, so the truncation marker and the model's `read` call point at the same file. */
  path: string;
  /** Text as it goes into the prompt (possibly truncated, with the marker inside). */
  content: string;
  truncated: boolean;
  /** Length of the file on disk, before any cap. */
  originalChars: number;
  /** True when the total budget was used up before this file; `content` is then only a note. */
  omitted?: boolean;
}

export interface LoadBootstrapOptions {
  perFileMaxChars?: number;
  totalMaxChars?: number;
  /** Unreadable files (permissions, I/O errors) are skipped so a run still starts; this says which and why. */
  onWarning?: (message: string) => void;
}

export function truncationMarker(name: string, omittedChars: number): string {
  return `[... ${omittedChars} chars of ${name} omitted; read the file with the read tool for the rest ...]`;
}

// Cutting between the halves of a surrogate pair would leave a lone surrogate that some providers reject as
// invalid UTF-8, so cut points move back by one when they would split a pair.
function safeCut(text: string, index: number): number {
  if (index <= 0 || index >= text.length) return index;
  const code = text.charCodeAt(index);
  return code >= 0xdc00 && code <= 0xdfff ? index - 1 : index;
}

/**
 * Keeps the first 75% and last 25% of `allowed` chars. The tail matters as much as the head: people append new
 * rules and memories at the end of these files, and those are the ones a pure head cut would drop.
 */
export function truncateHeadTail(name: string, text: string, allowed: number): string {
  if (text.length <= allowed) return text;
  const headEnd = safeCut(text, Math.floor(allowed * 0.75));
  const tailStart = safeCut(text, text.length - (allowed - Math.floor(allowed * 0.75)));
  const omitted = tailStart - headEnd;
  return `${text.slice(0, headEnd)}\n${truncationMarker(name, omitted)}\n${text.slice(tailStart)}`;
}

async function readIfPresent(file: string, onWarning?: (message: string) => void): Promise<string | undefined> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR" || code === "EISDIR") return undefined;
    onWarning?.(`skipped bootstrap file ${file}: ${(err as Error).message}`);
    return undefined;
  }
}

export async function loadBootstrapFiles(
  workspaceDir: string,
  opts: LoadBootstrapOptions = {},
): Promise<BootstrapFile[]> {
  const perFileMax = opts.perFileMaxChars ?? DEFAULT_PER_FILE_MAX_CHARS;
  const totalMax = opts.totalMaxChars ?? DEFAULT_TOTAL_MAX_CHARS;

  // Read in parallel (eight small files), then apply caps in the fixed order so the result is deterministic.
  const raw = await Promise.all(
    BOOTSTRAP_FILE_NAMES.map(async (name) => {
      const filePath = path.join(workspaceDir, name);
      return { name, filePath, text: await readIfPresent(filePath, opts.onWarning) };
    }),
  );

  const files: BootstrapFile[] = [];
  let remaining = totalMax;
  for (const { name, filePath, text } of raw) {
    // A whitespace-only file carries no instructions; a bare heading for it would only cost tokens.
    if (text === undefined || text.trim() === "") continue;
    const originalChars = text.length;
    let allowed = Math.min(perFileMax, originalChars);
    if (allowed > remaining) {
      if (remaining < MIN_USEFUL_CHARS) {
        files.push({
          name,
          path: filePath,
          content: `[${name} omitted: earlier workspace files used up the context budget; read the file with the read tool]`,
          truncated: true,
          originalChars,
          omitted: true,
        });
        // Budget is left as is: a smaller file further down may still fit in what remains.
        continue;
      }
      allowed = remaining;
    }
    files.push({
      name,
      path: filePath,
      content: truncateHeadTail(name, text, allowed),
      truncated: allowed < originalChars,
      originalChars,
    });
    // The marker is not charged against the budget: it is a fixed ~100 chars per truncated file, and charging it
    // would make the kept text depend on how long the file name is.
    remaining -= allowed;
  }
  return files;
}
