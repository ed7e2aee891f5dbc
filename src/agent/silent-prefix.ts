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
