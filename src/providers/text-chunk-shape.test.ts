import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { TextChunkShape } from "./text-chunk-shape.js";

/** The text chunk OpenAI sends (same id, created and model for the whole stream). */
function openAIChunk(content: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    id: "chatcmpl-abc",
    object: "chat.completion.chunk",
    created: 1764619200,
    model: "gpt-4o-mini",
    choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }],
    ...extra,
  });
}

/** What the provider would read from a chunk in full: the delta's content when it is a plain text chunk. */
function parsedContent(data: string): string | undefined {
  const chunk = JSON.parse(data);
  const choice = chunk.choices?.[0];
  if (!choice || choice.finish_reason || chunk.usage || chunk.choices.length !== 1) return undefined;
  return typeof choice.delta?.content === "string" ? choice.delta.content : undefined;
}

/** Reads a stream of chunks the way streamChat does: the shape first, else a full parse that it learns from. */
function readAll(chunks: string[]): { texts: (string | undefined)[]; withoutParse: number } {
  const shape = new TextChunkShape();
  let withoutParse = 0;
  const texts = chunks.map((data) => {
    const known = shape.content(data);
    if (known !== undefined) {
      withoutParse++;
      return known;
    }
    shape.learn(data, JSON.parse(data));
    return parsedContent(data);
  });
  return { texts, withoutParse };
}

describe("reading a stream's text chunks by their shape", () => {
  it("reads every text chunk after the first without a parse, and gets the same text a parse gives", () => {
    const tokens = ["Hello", ",", " world", "\n", ' "quoted"', " back\\slash", " é🙂", " \u0001ctl"];
    const chunks = tokens.map((t) => openAIChunk(t));
    const { texts, withoutParse } = readAll(chunks);
    expect(texts).toEqual(tokens);
    expect(withoutParse).toBe(tokens.length - 1);
  });

  it("never answers for a chunk that is not a plain text chunk: the first with its role, a tool call, the finish, usage", () => {
    const shape = new TextChunkShape();
    const first = openAIChunk("Hi");
    shape.learn(first, JSON.parse(first));
    const others = [
      JSON.stringify({
        id: "chatcmpl-abc",
        object: "chat.completion.chunk",
        created: 1764619200,
        model: "gpt-4o-mini",
        choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }],
      }),
      openAIChunk("x").replace('"finish_reason":null', '"finish_reason":"stop"'),
      openAIChunk("x").replace('{"content":"x"}', '{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}'),
      openAIChunk("x", { usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }),
      openAIChunk("x").replace('"model":"gpt-4o-mini"', '"model":"other"'),
    ];
    for (const data of others) expect(shape.content(data)).toBeUndefined();
  });

  it("does not learn a chunk whose shape is ambiguous or whose news is not only text", () => {
    const cases = [
      // "content" twice: the key that carries the text cannot be told by its name
      openAIChunk("a", { 'fp"content': 1 }),
      openAIChunk("a").replace('"finish_reason":null', '"finish_reason":"length"'),
      openAIChunk("a").replace('{"content":"a"}', '{"content":"a","reasoning_content":"thinking"}'),
      openAIChunk("a", { error: { message: "boom" } }),
    ];
    for (const data of cases) {
      const shape = new TextChunkShape();
      shape.learn(data, JSON.parse(data));
      expect(shape.content(data)).toBeUndefined();
    }
  });

  it("learns DeepSeek's chunks, which carry reasoning_content: null beside every token", () => {
    const chunk = (t: string) =>
      JSON.stringify({ id: "x", choices: [{ index: 0, delta: { content: t, reasoning_content: null } }] });
    expect(readAll(["a", "b", "c"].map(chunk))).toEqual({ texts: ["a", "b", "c"], withoutParse: 2 });
  });

  it("a body that would close the string early and add members is not read as text (the full parse decides)", () => {
    const shape = new TextChunkShape();
    const learned = openAIChunk("hi");
    shape.learn(learned, JSON.parse(learned));
    const prefix = learned.slice(0, learned.indexOf('"content":"') + '"content":"'.length);
    const suffix = learned.slice(learned.indexOf('"},"logprobs"'));
    // the same text around a body with bare quotes: a different document, with a tool call in its delta
    const forged = `${prefix}a","tool_calls":[{"index":0}],"x":"b${suffix}`;
    expect(JSON.parse(forged).choices[0].delta.tool_calls).toEqual([{ index: 0 }]);
    expect(shape.content(forged)).toBeUndefined();
    // a body ending in a backslash would escape the closing quote
    expect(shape.content(`${prefix}a\\${suffix}`)).toBeUndefined();
  });

  it("a server that changes a field in every chunk costs a parse per chunk and nothing else: the text is right", () => {
    const chunks = Array.from({ length: 40 }, (_, i) => openAIChunk(`t${i}`, { obfuscation: `pad${i}` }));
    const { texts, withoutParse } = readAll(chunks);
    expect(texts).toEqual(chunks.map((_, i) => `t${i}`));
    expect(withoutParse).toBe(0);
  });

  it("property: any tokens, in chunks spaced or not, read by shape give exactly what a full parse gives", () => {
    const token = fc.string({ unit: "binary", maxLength: 12 });
    const kind = fc.constantFrom("text", "text", "text", "finish", "role", "tool");
    fc.assert(
      fc.property(fc.array(fc.tuple(token, kind), { maxLength: 30 }), fc.boolean(), (items, spaced) => {
        const chunks = items.map(([t, k]) => {
          const delta =
            k === "role"
              ? { role: "assistant", content: t }
              : k === "tool"
                ? { tool_calls: [{ index: 0, function: { arguments: t } }] }
                : { content: t };
          const doc = {
            id: "chatcmpl-p",
            model: "m",
            choices: [{ index: 0, delta, finish_reason: k === "finish" ? "stop" : null }],
          };
          return spaced ? JSON.stringify(doc, null, 1) : JSON.stringify(doc);
        });
        expect(readAll(chunks).texts).toEqual(chunks.map(parsedContent));
      }),
      { numRuns: 300 },
    );
  });
});
