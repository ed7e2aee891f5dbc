/**
 * Block streaming's chunker (SPEC 7): turns one assistant message's text, as it streams, into reply blocks of
 * `minChars`–`maxChars` characters (UTF-16 code units). Pure: no I/O, no timers; the caller passes `now` with each
 * delta, asks `idleAt()` when the text becomes idle and calls `idle(now)` then.
 *
 * Where a block ends: the last break in [minChars, maxChars] of the first kind that exists — after a blank line
 * (paragraph), after a newline, after a sentence's end, after whitespace — outside any code fence. Only when no break
 * outside a fence exists is a block split inside one: at a newline there if possible, else whitespace, else hard.
 * Such a split closes the fence at the end of the block (the same marker) and reopens it (marker + info string) at
 * the start of the next one, so every block renders on its own.
 *
 * When blocks go out: `push` returns a block only once the text waiting exceeds `maxChars` (more text may still
 * bring a better break before that), `end` returns the rest when the message ends, and `idle` returns what waited
 * `idleMs` without a new delta, however short (coalescing). An idle block keeps back a trailing line that could
 * still become a fence line (it starts with ` or ~), so a fence is never torn from its line start.
 *
 * The invariants (property tests in block-chunker.test.ts): each block is `reopen + body + close`, and the bodies
 * joined are exactly the text pushed; no block is longer than `maxChars`; a block shorter than `minChars` is the
 * message's last block or an idle block; every block's fences are balanced when the text's fences are.
 */

export interface BlockChunkerOptions {
  minChars: number;
  maxChars: number;
  /** no delta for this long: what waits goes out as a block */
  idleMs: number;
  /** how many chars at the end of the waiting text an idle block must keep back (e.g. a possible silent token) */
  holdBack?: (waiting: string) => number;
}

export const DEFAULT_BLOCK_CHUNKING: BlockChunkerOptions = { minChars: 800, maxChars: 1200, idleMs: 1000 };

/** One block, with the synthetic fence lines it carries (so a caller can take them off again). */
export interface Block {
  /** the block as sent: reopen + body + close */
  text: string;
  /** the part of the message's text this block carries */
  body: string;
  /** a fence line opened again at the start of the block ("```ts\n"), or "" */
  reopen: string;
  /** a fence line that closes the block's open fence at its end ("```" or "\n```"), or "" */
  close: string;
  /** why the block went out: it reached its size, the message ended, or the text stood idle */
  reason: "size" | "end" | "idle";
}

interface Fence {
  /** the opening run of ` or ~ */
  marker: string;
  /** the whole opening line, to reopen the fence with */
  line: string;
}

const FENCE_LINE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

export class BlockChunker {
  private readonly opts: BlockChunkerOptions;
  /** message text not yet sent */
  private pending = "";
  /** the reopened fence line at the start of `pending` (synthetic, not message text) */
  private reopenPrefix = "";
  private lastDeltaAt: number | undefined;

  constructor(opts: Partial<BlockChunkerOptions> = {}) {
    this.opts = { ...DEFAULT_BLOCK_CHUNKING, ...opts };
    const { minChars, maxChars } = this.opts;
    if (!(minChars > 0 && maxChars >= minChars + 16)) {
      throw new Error(`block chunker: need 0 < minChars and maxChars ≥ minChars + 16, got ${minChars}/${maxChars}`);
    }
  }

  /** Adds a delta; returns the blocks that are now complete (only when the waiting text exceeds maxChars). */
  push(delta: string, now: number): Block[] {
    this.append(delta, now);
    const out: Block[] = [];
    while (this.size() > this.opts.maxChars) out.push(this.cut("size"));
    return out;
  }

  /** Adds a delta without cutting blocks (all of them come from `end`). */
  append(delta: string, now: number): void {
    this.pending += delta;
    this.lastDeltaAt = now;
  }

  /** Drops the last `n` chars of the waiting text (a trailing silent token that must not be sent). */
  dropTail(n: number): void {
    if (n > 0) this.pending = this.pending.slice(0, Math.max(0, this.pending.length - n));
  }

  /** The message ended: everything that waits, split to size. */
  end(): Block[] {
    const out: Block[] = [];
    while (this.pending !== "") {
      if (this.sizeWithClose(this.pending.length, true) > this.opts.maxChars) out.push(this.cut("size"));
      else out.push(this.take(this.pending.length, "end"));
    }
    this.clear();
    return out;
  }

  /** When the waiting text becomes idle (undefined: nothing waits). */
  idleAt(): number | undefined {
    return this.pending === "" || this.lastDeltaAt === undefined ? undefined : this.lastDeltaAt + this.opts.idleMs;
  }

  /** No delta for idleMs: the waiting text goes out however short (a trailing possible fence line stays). */
  idle(now: number): Block[] {
    const at = this.idleAt();
    if (at === undefined || now < at) return [];
    const out: Block[] = [];
    for (let upTo = this.idleCut(); upTo > 0; upTo = this.idleCut()) {
      if (this.sizeWithClose(upTo, false) > this.opts.maxChars) {
        // too long with its closing fence line: a size block first, unless it would reach into what is kept back
        const p = this.breakPoint();
        if (p > upTo) break;
        out.push(this.take(p, "size"));
        continue;
      }
      out.push(this.take(upTo, "idle"));
      break;
    }
    // idle once per pause: what was kept back waits for the next delta or the end
    this.lastDeltaAt = undefined;
    return out;
  }

  /** Everything waiting is dropped (the attempt that produced it was thrown away). */
  reset(): void {
    this.clear();
  }

  private clear(): void {
    this.pending = "";
    this.reopenPrefix = "";
    this.lastDeltaAt = undefined;
  }

  /** length of the block that would go out now: reopen line + text */
  private size(): number {
    return this.reopenPrefix.length + this.pending.length;
  }

  /** length of the block pending[0, at) would make, with its reopen and close lines */
  private sizeWithClose(at: number, atEnd: boolean): number {
    const fence = this.fenceAt(at, atEnd);
    const close = fence ? closeFor(this.pending.slice(0, at), fence).length : 0;
    return this.reopenPrefix.length + at + close;
  }

  /** Sends pending[0, at) as a block, closing (and reopening in the rest) a fence open at `at`. */
  private take(at: number, reason: Block["reason"]): Block {
    const body = this.pending.slice(0, at);
    const fence = this.fenceAt(at, reason === "end");
    const close = fence ? closeFor(body, fence) : "";
    const reopen = this.reopenPrefix;
    this.pending = this.pending.slice(at);
    // the fence goes on in the next block (after an idle block, in the text still to come)
    this.reopenPrefix = fence && reason !== "end" ? `${fence.line}\n` : "";
    return { text: reopen + body + close, body, reopen, close, reason };
  }

  /** One size-bounded block from the front of the waiting text. */
  private cut(reason: Block["reason"]): Block {
    return this.take(this.breakPoint(), reason);
  }

  /** Where the next block ends, as an index into `pending` (see the file comment for the order). */
  private breakPoint(): number {
    const { minChars, maxChars } = this.opts;
    const offset = this.reopenPrefix.length;
    const lo = Math.max(1, minChars - offset);
    const hi = Math.min(this.pending.length, maxChars - offset);
    const text = this.pending;
    const fences = this.fenceMap(hi, false);
    const outside = (p: number) => fences[p] === undefined;
    const kinds: Array<(p: number) => boolean> = [
      (p) => text[p - 1] === "\n" && text[p - 2] === "\n",
      (p) => text[p - 1] === "\n",
      (p) => /\s/.test(text[p - 1] ?? "") && /[.!?]["')\]]*$/.test(text.slice(Math.max(0, p - 5), p - 1)),
      (p) => /\s/.test(text[p - 1] ?? ""),
    ];
    for (const kind of kinds) {
      for (let p = hi; p >= lo; p--) if (kind(p) && outside(p)) return p;
    }
    // Inside a fence: the block also carries the closing line, so it must end earlier.
    const fits = (p: number) => {
      const fence = fences[p];
      return !fence || offset + p + closeFor(text.slice(0, p), fence).length <= maxChars;
    };
    for (const kind of [kinds[1], kinds[3]]) {
      for (let p = hi; p >= lo; p--) if (kind(p) && fits(p)) return p;
    }
    let p = hi;
    while (p > lo && !fits(p)) p--;
    // never between the halves of a surrogate pair
    if (p > 1 && /[\uD800-\uDBFF]/.test(text[p - 1])) p--;
    return Math.max(1, p);
  }

  /** Idle: all of it, except a trailing partial line that starts like a fence line, and what holdBack keeps. */
  private idleCut(): number {
    const text = this.pending;
    const lineStart = text.lastIndexOf("\n") + 1;
    const partial = text.slice(lineStart);
    const upTo = partial !== "" && /^ {0,3}[`~]/.test(partial) ? lineStart : text.length;
    return Math.min(upTo, text.length - (this.opts.holdBack?.(text) ?? 0));
  }

  /** The fence open at position `p` of `pending` (a block ending there would end inside it), if any. */
  private fenceAt(p: number, atEnd: boolean): Fence | undefined {
    return this.fenceMap(p, atEnd)[p];
  }

  /**
   * For each position 0..limit of `pending`: the fence a block ending there would leave open. A position inside a
   * fence's opening or closing line counts as inside that fence. `atEnd`: the last line is complete (the message
   * ended), so a closing line without its newline still closes.
   */
  private fenceMap(limit: number, atEnd: boolean): Array<Fence | undefined> {
    const map: Array<Fence | undefined> = new Array(limit + 1);
    let open: Fence | undefined;
    if (this.reopenPrefix) {
      const line = this.reopenPrefix.slice(0, -1);
      const m = FENCE_LINE.exec(line);
      if (m) open = { marker: m[1], line };
    }
    const text = this.pending;
    let start = 0;
    map[0] = open;
    while (start <= limit && start < text.length) {
      const nl = text.indexOf("\n", start);
      const end = nl === -1 ? text.length : nl;
      const m = FENCE_LINE.exec(text.slice(start, end));
      const opener = !open && m && isOpener(m) ? { marker: m[1], line: text.slice(start, end) } : undefined;
      const within = open ?? opener;
      for (let p = start + 1; p <= Math.min(end, limit); p++) map[p] = within;
      let after = open;
      if (open && m && closes(open, m)) after = undefined;
      else if (opener) after = opener;
      if (nl === -1) {
        if (atEnd && end <= limit) map[end] = after;
        break;
      }
      if (nl + 1 <= limit) map[nl + 1] = after;
      open = after;
      start = nl + 1;
    }
    return map;
  }
}

function isOpener(m: RegExpExecArray): boolean {
  // a backtick fence's info string may not contain a backtick (CommonMark)
  return !(m[1][0] === "`" && m[2].includes("`"));
}

function closes(open: Fence, m: RegExpExecArray): boolean {
  return m[1][0] === open.marker[0] && m[1].length >= open.marker.length && m[2].trim() === "";
}

/** The line that closes `fence` after `body`: on a line of its own. */
function closeFor(body: string, fence: Fence): string {
  return body === "" || body.endsWith("\n") ? fence.marker : `\n${fence.marker}`;
}

/**
 * The blocks' text with the synthetic fence lines taken off: equals the message's text (the chunker's invariant;
 * the property tests check it).
 */
export function blockBodies(blocks: readonly Block[]): string {
  return blocks.map((b) => b.body).join("");
}
