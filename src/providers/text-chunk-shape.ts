/**
 * The text chunks of one Chat Completions stream are the same JSON over and over with only the content string
 * changed: `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":…,"model":"…","choices":[{"index":0,
 * "delta":{"content":"<token>"},"logprobs":null,"finish_reason":null}]}`. A full `JSON.parse` of each builds five
 * objects to read one string; at a thousand streams of 50 tokens a second that is 50,000 parses a second on the
 * gateway's one thread, plus the garbage they leave.
 *
 * So a stream learns the shape of its last plain text chunk (everything before and after the content's string
 * literal) and reads a chunk that has the same text around a different string literal without parsing it. That is
 * exact, not a guess: replacing one JSON string literal by another changes no other value of the document, so the
 * chunk parses to the learned one with only `content` changed, and the learned one was a plain text chunk (no tool
 * call, no reasoning, no finish reason, no usage, no error; see `learn`). Anything else (the first chunk with its
 * role, a tool call, the finish, a server that adds a changing field to every chunk) takes the full parse, and a
 * stream whose chunks keep missing stops learning.
 *
 * Trust: the shape is found by its `"content"` key, which must occur once in the chunk. A server crafting keys to
 * move that spot could only choose which string becomes the text, which it chooses anyway.
 */

/** A stream that misses this many more times than it hits stops learning (its chunks change more than content). */
const GIVE_UP_AFTER_MISSES = 8;

const QUOTE = 34;
const BACKSLASH = 92;

export class TextChunkShape {
  private prefix = "";
  private suffix = "";
  private learned = false;
  private hits = 0;
  private misses = 0;

  /**
   * The content of `data` when it is the learned text chunk with another string (possibly ""), else undefined: the
   * caller then parses it in full (and may `learn` from it).
   */
  content(data: string): string | undefined {
    if (!this.learned) return undefined;
    const { prefix, suffix } = this;
    if (data.length < prefix.length + suffix.length || !data.startsWith(prefix) || !data.endsWith(suffix)) {
      this.misses++;
      return undefined;
    }
    const body = data.slice(prefix.length, data.length - suffix.length);
    const text = stringBody(body);
    if (text === undefined) this.misses++;
    else this.hits++;
    return text;
  }

  /** After a full parse: remember `data`'s shape when `chunk` is a plain text chunk. */
  learn(data: string, chunk: Record<string, unknown>): void {
    this.learned = false;
    if (this.misses > this.hits + GIVE_UP_AFTER_MISSES) return;
    const content = plainTextContent(chunk);
    if (content === undefined) return;
    const key = data.indexOf('"content"');
    if (key === -1 || data.indexOf('"content"', key + 1) !== -1) return;
    let at = skipSpace(data, key + '"content"'.length);
    if (data.charCodeAt(at) !== 58 /* : */) return;
    at = skipSpace(data, at + 1);
    if (data.charCodeAt(at) !== QUOTE) return;
    const end = literalEnd(data, at + 1);
    if (end === -1) return;
    // the literal found must be the chunk's content, or the key found was not the delta's
    if (stringBody(data.slice(at + 1, end)) !== content) return;
    this.prefix = data.slice(0, at + 1);
    this.suffix = data.slice(end);
    this.learned = true;
  }
}

/**
 * The text of a chunk whose only news is its content: one choice, a non-empty string `content`, the delta's other
 * members `role` or null (DeepSeek sends `"reasoning_content":null` beside every token), no finish reason, no usage,
 * no error. Undefined for any other chunk.
 */
function plainTextContent(chunk: Record<string, unknown>): string | undefined {
  if (chunk.error || (chunk.usage !== undefined && chunk.usage !== null)) return undefined;
  const choices = chunk.choices;
  if (!Array.isArray(choices) || choices.length !== 1) return undefined;
  const choice: unknown = choices[0];
  if (typeof choice !== "object" || choice === null) return undefined;
  const { delta, finish_reason: finish } = choice as { delta?: unknown; finish_reason?: unknown };
  if ((finish !== undefined && finish !== null) || typeof delta !== "object" || delta === null) return undefined;
  const fields = delta as Record<string, unknown>;
  if (typeof fields.content !== "string" || fields.content === "") return undefined;
  for (const [name, value] of Object.entries(fields)) {
    if (name !== "content" && name !== "role" && value !== null) return undefined;
  }
  return fields.content;
}

/** The string a JSON string literal's body (between its quotes) stands for; undefined when it is not one. */
function stringBody(body: string): string | undefined {
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    // an escape, a quote or a control character: let JSON decide (a bare quote or control character fails there)
    if (c === QUOTE || c === BACKSLASH || c < 32) {
      try {
        const text: unknown = JSON.parse(`"${body}"`);
        return typeof text === "string" ? text : undefined;
      } catch {
        return undefined;
      }
    }
  }
  return body;
}

/** The index of the quote that closes the string literal whose body starts at `from`; -1 if it never closes. */
function literalEnd(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return i;
  }
  return -1;
}

function skipSpace(text: string, from: number): number {
  let i = from;
  for (let c = text.charCodeAt(i); c === 32 || c === 9 || c === 10 || c === 13; c = text.charCodeAt(++i)) {}
  return i;
}
