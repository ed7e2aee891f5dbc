/**
 * Control characters (C0, DEL, C1) in a session key, a label or an id (issue 25). NUL cannot be stored in a Postgres
 * TEXT column at all (the write fails with "invalid byte sequence for encoding UTF8", and `storage migrate` of a store
 * holding one aborts); the others make a key nobody can type or see. Refused where such names come in (RPC params,
 * the CLI), on both backends, so no store ever holds one.
 */
export const CONTROL_CHARACTERS_MESSAGE = "must not contain control characters";

export function hasControlCharacter(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  }
  return false;
}

/** The same text with every control character replaced by U+FFFD (visible, and never a control character itself). */
export function replaceControlCharacters(s: string): string {
  let out = "";
  for (const ch of s) out += hasControlCharacter(ch) ? "\uFFFD" : ch;
  return out;
}
