import fs from "node:fs/promises";
import type { LogLine, LogLineLevel, LogsTailResult } from "../protocol/operator.js";

/** Without `maxBytes`, at most this much of the file is read per call (a page of a few thousand lines). */
export const LOG_TAIL_DEFAULT_MAX_BYTES = 256 * 1024;
export const LOG_TAIL_DEFAULT_LIMIT = 500;

const RANK: Record<LogLineLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface LogTailQuery {
  cursor?: number;
  limit?: number;
  maxBytes?: number;
  level?: LogLineLevel;
}

/**
 * logs.tail: complete lines of the gateway log from `cursor` (a byte offset) to the end, or its last `limit` lines
 * without one. Only whole lines are returned; the cursor stops after the last newline, so a line being written is
 * read whole by the next call. A file smaller than the cursor was rotated (gateway.log.1) or cut: reading starts
 * again at its beginning and `reset` says so. A missing file is an empty log (the gateway may write none).
 */
export async function tailLog(file: string, q: LogTailQuery): Promise<LogsTailResult> {
  const limit = q.limit ?? LOG_TAIL_DEFAULT_LIMIT;
  const maxBytes = q.maxBytes ?? LOG_TAIL_DEFAULT_MAX_BYTES;
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    return { file, cursor: 0, size: 0, lines: [], truncated: false, reset: q.cursor !== undefined && q.cursor > 0 };
  }
  try {
    const { size } = await handle.stat();
    const reset = q.cursor !== undefined && q.cursor > size;
    // no cursor: the last maxBytes; a cursor past the end: the file was rotated, from its beginning
    const from = q.cursor === undefined ? Math.max(0, size - maxBytes) : reset ? 0 : q.cursor;
    const readFrom = Math.max(from, size - maxBytes);
    let truncated = readFrom > from;
    const buf = Buffer.alloc(size - readFrom);
    if (buf.length > 0) await handle.read(buf, 0, buf.length, readFrom);
    // started inside a line (the tail of a big file, or bytes skipped for maxBytes): that line is left out
    let first = 0;
    if (readFrom > 0 && (truncated || q.cursor === undefined)) {
      first = buf.indexOf(0x0a) + 1;
      if (first === 0) first = buf.length;
      truncated = true;
    }
    const last = buf.lastIndexOf(0x0a);
    const cursor = last >= first ? readFrom + last + 1 : readFrom + first;
    const whole = last >= first ? buf.toString("utf8", first, last) : "";
    let lines = last >= first ? parseLines(whole.split("\n")) : [];
    if (q.level) lines = lines.filter((l) => RANK[l.level ?? "info"] >= RANK[q.level as LogLineLevel]);
    if (lines.length > limit) {
      lines = lines.slice(-limit);
      truncated = true;
    }
    return { file, cursor, size, lines, truncated, reset };
  } finally {
    await handle.close();
  }
}

/** Each line's level, from the text format (`<time> INFO  msg`) or JSON (`"level":"info"`); a line without one
 * (a stack trace's continuation) takes the level of the line before it, so a level filter keeps it with its line. */
function parseLines(raw: string[]): LogLine[] {
  let previous: LogLineLevel | undefined;
  return raw.map((text) => {
    const level = levelOf(text) ?? previous;
    previous = level;
    return level ? { level, text } : { text };
  });
}

function levelOf(line: string): LogLineLevel | undefined {
  const text = /^\S+ (DEBUG|INFO|WARN|ERROR)\b/.exec(line);
  if (text) return text[1].toLowerCase() as LogLineLevel;
  if (line.startsWith("{")) {
    const json = /"level":"(debug|info|warn|error)"/.exec(line);
    if (json) return json[1] as LogLineLevel;
  }
  const plain = /^\[loopgate\] (debug|info|warn|error):/.exec(line);
  return plain ? (plain[1] as LogLineLevel) : undefined;
}
