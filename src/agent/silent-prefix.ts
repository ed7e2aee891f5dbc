/**
 * Streaming and the silent token (SPEC 9): a reply that is exactly `NO_REPLY` is never shown, and a reply that ends
 * with it has it stripped. While text still streams, its end may be growing into the token, so whoever shows text
 * early (chat deltas, reply blocks) holds that end back until it cannot become the token any more.
 */

// Separators around the token, as in reply.ts's isSilentReply / stripTrailingSilentToken.
const SEP = String.raw`[\s\p{P}\p{S}]`;
/** a strict prefix of the token (it may go on to become it) */
const PARTIAL = "n(?:o(?:_(?:r(?:e(?:p(?:l)?)?)?)?)?)?";
/** the whole text so far is separators and (part of) the token: all of it could still end up silent */
const WHOLE = new RegExp(`^${SEP}*(?:${PARTIAL}|no_reply${SEP}*)?$`, "iu");
/** the text ends with (part of) the token after a separator: that end could still be stripped */
const TAIL = new RegExp(`(?<=${SEP})(?:${PARTIAL}|no_reply${SEP}*)$`, "iu");
/**
 * Only the end of the text is searched, so a chat delta costs the same however long the reply has grown (a token
 * followed by more separators than this is not held back; the final still strips it).
 */
const TAIL_WINDOW = 64;

/** How many characters at the end of `text` could still become (or be) the silent token: hold them back. */
export function silentTokenTail(text: string): number {
  if (text === "") return 0;
  // cheap for ordinary text: the match fails at its first character that is neither a separator nor the token's
  if (WHOLE.test(text)) return text.length;
  const m = TAIL.exec(text.length > TAIL_WINDOW ? text.slice(-TAIL_WINDOW) : text);
  return m ? m[0].length : 0;
}

/**
 * `silentTokenTail` for a text that grows by appending (a streamed reply), without reading the whole text each time.
 * Why: a reply built by `+=` is a rope; a regular expression (or a slice) over it first copies the whole reply into
 * one flat string, so a chat delta cost a copy of everything streamed before it (bench/README.md, "stream CPU per
 * token"). This keeps the end of the text apart, and the whole of it only while all of it could still be silent:
 * text that cannot be silent never becomes so by growing (every prefix of a silent text is silent, as WHOLE says), so
 * once WHOLE fails only the last TAIL_WINDOW characters matter, as in silentTokenTail.
 */
export class SilentTail {
  /** the whole text while it may still be silent, else at least its last TAIL_WINDOW characters */
  private end = "";
  private length = 0;
  private mayBeSilent = true;

  /** the text starts again, empty (a `replace`) */
  reset(): void {
    this.end = "";
    this.length = 0;
    this.mayBeSilent = true;
  }

  append(delta: string): void {
    this.length += delta.length;
    this.end += delta;
    // trimmed in steps, so that a delta costs a copy of at most 2 × TAIL_WINDOW characters
    if (!this.mayBeSilent && this.end.length > 2 * TAIL_WINDOW) this.end = this.end.slice(-TAIL_WINDOW);
  }

  /** silentTokenTail(the text so far) */
  held(): number {
    if (this.length === 0) return 0;
    if (this.mayBeSilent) {
      if (WHOLE.test(this.end)) return this.length;
      this.mayBeSilent = false;
    }
    const m = TAIL.exec(this.end.length > TAIL_WINDOW ? this.end.slice(-TAIL_WINDOW) : this.end);
    return m ? m[0].length : 0;
  }
}
