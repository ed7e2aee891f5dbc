/**
 * Structural limits on a request frame, checked on the raw bytes before `JSON.parse` and schema validation.
 * Parsing a frame with a million keys costs seconds of one event loop that every client shares; this scan stops
 * at the first limit it passes, so a hostile frame costs about as much as its first few kilobytes. It does not
 * validate JSON: a frame within the limits still goes through `JSON.parse`, which reports syntax errors.
 */

export interface FrameLimits {
  /** nesting of objects and arrays */
  maxDepth: number;
  maxKeysPerObject: number;
  maxItemsPerArray: number;
  /** one string's encoded length (UTF-8 bytes, escapes counted as written) */
  maxStringBytes: number;
  /** keys and values in the whole frame */
  maxValues: number;
}

export const FRAME_LIMITS: FrameLimits = {
  maxDepth: 32,
  maxKeysPerObject: 1000,
  maxItemsPerArray: 10_000,
  maxStringBytes: 16 * 1024 * 1024,
  maxValues: 100_000,
};

/** Attachments on one `agent` / `chat.send` message (OpenClaw's `attachments`). */
export const ATTACHMENT_LIMITS = {
  /** attachments on one message */
  maxCount: 8,
  /** one attachment's decoded size; an image is then scaled down to ≤ 1,200 px and ≤ 5 MiB before it is stored */
  maxBytes: 20 * 1024 * 1024,
  /** a text attachment is inlined into the message up to this many characters; the rest is cut, and the text says so */
  maxTextChars: 20_000,
} as const;

/** The text fields of a cron job (config `cron.jobs[]` and `cron.add`), in characters. */
export const CRON_JOB_LIMITS = {
  /** a cron expression: ranges and steps keep real ones short; this still leaves room for long lists */
  scheduleChars: 256,
  /** an IANA time zone name (the longest is about 30) */
  tzChars: 64,
  /** the prompt each run sends */
  messageChars: 32_768,
  /** as `agent`'s sessionKey */
  sessionKeyChars: 512,
  /** "<provider>/<model>" */
  modelChars: 256,
} as const;

/** An error reply names at most this many problems, then how many more there were. */
export const MAX_REPORTED_ISSUES = 20;

export interface LimitProblem {
  /** where, as `frame.params.x[3]` */
  path: string;
  message: string;
  /** the frame's top-level `id`, when it came before the problem (so the reply can carry it) */
  id?: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
/** longest key quoted in a problem's path */
const KEY_IN_PATH = 40;

interface Container {
  array: boolean;
  entries: number;
  expectKey: boolean;
  /** byte range of the last key read in this object */
  keyStart: number;
  keyEnd: number;
}

/** Index of the quote closing the string whose content starts at `from`, or -1 when it is not closed. */
function closingQuote(buf: Buffer, from: number): number {
  let at = buf.indexOf(QUOTE, from);
  while (at > 0) {
    let slashes = 0;
    for (let j = at - 1; j >= from && buf[j] === BACKSLASH; j--) slashes++;
    if (slashes % 2 === 0) return at;
    at = buf.indexOf(QUOTE, at + 1);
  }
  return -1;
}

function isDelimiter(c: number | undefined): boolean {
  return c === undefined || c === COMMA || c === CLOSE_ARRAY || c === CLOSE_OBJECT || c <= 0x20 || c === COLON;
}

/** The path into the first `depth` containers of the stack. */
function pathOf(buf: Buffer, stack: readonly Container[], depth: number): string {
  let out = "frame";
  for (const c of stack.slice(0, depth)) {
    if (c.array) out += `[${Math.max(0, c.entries - 1)}]`;
    else {
      const key = buf.toString("utf8", c.keyStart, Math.min(c.keyEnd, c.keyStart + KEY_IN_PATH));
      out += `.${key}${c.keyEnd - c.keyStart > KEY_IN_PATH ? "…" : ""}`;
    }
  }
  return out;
}

/** The first structural limit `buf` (a JSON text) passes, or undefined when it stays within all of them. */
export function findLimitProblem(buf: Buffer, limits: FrameLimits = FRAME_LIMITS): LimitProblem | undefined {
  if (withinAllLimits(buf, limits)) return undefined;
  const scan = new FrameScan(buf, limits);
  return scan.run();
}

/**
 * True when `buf` cannot pass any limit, from its length and its bracket bytes alone (most frames: a turn's `agent`
 * request is ~250 bytes). Every key and value takes at least one byte, so a frame no longer than the smallest count
 * limit has no more keys, items, values or string bytes than it allows; and nesting needs one `{` or `[` byte per
 * level, inside strings or not, so a frame with no more of them than `maxDepth` is never too deep. Anything else is
 * scanned; this decides nothing the scan would answer differently.
 */
function withinAllLimits(buf: Buffer, limits: FrameLimits): boolean {
  const counts = Math.min(limits.maxKeysPerObject, limits.maxItemsPerArray, limits.maxStringBytes, limits.maxValues);
  if (buf.length > counts) return false;
  const objects = countUpTo(buf, OPEN_OBJECT, limits.maxDepth + 1);
  return objects + countUpTo(buf, OPEN_ARRAY, limits.maxDepth + 1 - objects) <= limits.maxDepth;
}

/** How many `byte`s `buf` holds, counting no further than `max`. */
function countUpTo(buf: Buffer, byte: number, max: number): number {
  let n = 0;
  for (let at = buf.indexOf(byte); at >= 0 && n < max; at = buf.indexOf(byte, at + 1)) n++;
  return n;
}

class FrameScan {
  private readonly stack: Container[] = [];
  private values = 0;
  private id: string | undefined;
  private idKeyOpen = false;

  constructor(
    private readonly buf: Buffer,
    private readonly limits: FrameLimits,
  ) {}

  run(): LimitProblem | undefined {
    const { buf } = this;
    let i = 0;
    while (i < buf.length) {
      const c = buf[i];
      if (c === QUOTE) {
        const close = closingQuote(buf, i + 1);
        const end = close < 0 ? buf.length : close;
        const problem = this.onString(i + 1, end);
        if (problem) return problem;
        i = end + 1;
      } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        const problem = this.onValue() ?? this.open(c === OPEN_ARRAY);
        if (problem) return problem;
        i++;
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        this.stack.pop();
        i++;
      } else if (c === COMMA) {
        const top = this.stack.at(-1);
        if (top && !top.array) top.expectKey = true;
        i++;
      } else if (c <= 0x20 || c === COLON) {
        i++;
      } else {
        // a number or literal: one value, however many bytes
        const problem = this.onValue();
        if (problem) return problem;
        while (!isDelimiter(buf[i])) i++;
      }
    }
    return undefined;
  }

  /** `inside`: the problem is the container on top of the stack, not the value just read in it */
  private problem(message: string, inside = true): LimitProblem {
    const depth = inside ? this.stack.length - 1 : this.stack.length;
    const path = pathOf(this.buf, this.stack, depth);
    return { path, message, ...(this.id !== undefined ? { id: this.id } : {}) };
  }

  private onString(start: number, end: number): LimitProblem | undefined {
    const tooLong = end - start > this.limits.maxStringBytes;
    const top = this.stack.at(-1);
    if (top && !top.array && top.expectKey) {
      top.expectKey = false;
      top.keyStart = start;
      top.keyEnd = end;
      top.entries++;
      this.idKeyOpen = this.stack.length === 1 && end - start === 2 && this.buf.toString("latin1", start, end) === "id";
      if (top.entries > this.limits.maxKeysPerObject) {
        return this.problem(`an object with more than ${this.limits.maxKeysPerObject} keys`);
      }
      if (tooLong) return this.problem(`a key of more than ${this.limits.maxStringBytes} bytes`);
      return this.countValue();
    }
    if (this.idKeyOpen && this.stack.length === 1 && end - start <= 512) {
      this.id = this.buf.toString("utf8", start, end);
    }
    const problem = this.onValue();
    if (problem || !tooLong) return problem;
    return this.problem(`a string of more than ${this.limits.maxStringBytes} bytes`, false);
  }

  /** a value starts (not a key) */
  private onValue(): LimitProblem | undefined {
    this.idKeyOpen = false;
    const top = this.stack.at(-1);
    if (top?.array) {
      top.entries++;
      if (top.entries > this.limits.maxItemsPerArray) {
        return this.problem(`an array with more than ${this.limits.maxItemsPerArray} items`);
      }
    }
    return this.countValue();
  }

  private countValue(): LimitProblem | undefined {
    if (++this.values > this.limits.maxValues) {
      return this.problem(`more than ${this.limits.maxValues} keys and values in one frame`);
    }
    return undefined;
  }

  private open(array: boolean): LimitProblem | undefined {
    this.stack.push({ array, entries: 0, expectKey: !array, keyStart: 0, keyEnd: 0 });
    if (this.stack.length > this.limits.maxDepth) {
      return this.problem(`nesting deeper than ${this.limits.maxDepth} levels`);
    }
    return undefined;
  }
}
