import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createScriptedProvider, loadScriptFile, type Script, ScriptedProvider } from "./scripted.js";
import { type ChatMessage, type ModelStreamEvent, ProviderError } from "./types.js";

function request(messages: ChatMessage[] = [{ role: "user", content: "hi" }], signal = new AbortController().signal) {
  return { model: "m", messages, tools: [], signal };
}

async function play(provider: ScriptedProvider, messages?: ChatMessage[], signal?: AbortSignal) {
  const events: ModelStreamEvent[] = [];
  let error: unknown;
  try {
    for await (const ev of provider.stream(request(messages, signal))) events.push(ev);
  } catch (err) {
    error = err;
  }
  const text = events.flatMap((e) => (e.type === "text_delta" ? [e.delta] : [])).join("");
  return { events, text, error };
}

describe("ScriptedProvider: turns", () => {
  it("plays the script's turns in order, one per model call", async () => {
    const provider = new ScriptedProvider("demo", { turns: [{ text: "first" }, { text: ["sec", "ond"] }] });
    expect((await play(provider)).text).toBe("first");
    const second = await play(provider);
    expect(second.text).toBe("second");
    expect(second.events.filter((e) => e.type === "text_delta")).toHaveLength(2); // chunks stream separately
    expect(provider.callCount).toBe(2);
  });

  it("thinking given as an array streams one thinking delta per element, then one thinking_end with the whole", async () => {
    const provider = new ScriptedProvider("demo", { turns: [{ thinking: ["Two plus ", "two."], text: "4" }] });
    const { events } = await play(provider);
    expect(events.filter((e) => e.type === "thinking_delta" || e.type === "thinking_end")).toEqual([
      { type: "thinking_delta", delta: "Two plus " },
      { type: "thinking_delta", delta: "two." },
      { type: "thinking_end", thinking: "Two plus two." },
    ]);
  });

  it("a turn with tool calls streams them after its text and ends with stopReason tool_calls", async () => {
    const provider = new ScriptedProvider("demo", {
      turns: [
        {
          thinking: "need a listing",
          text: "Looking.",
          toolCalls: [
            { name: "exec", arguments: { command: "ls" } },
            { id: "mine", name: "read" },
          ],
          usage: { input: 100, output: 7 },
        },
      ],
    });
    const { events } = await play(provider);
    expect(events.map((e) => e.type)).toEqual([
      "thinking_delta",
      "thinking_end",
      "text_delta",
      "tool_call",
      "tool_call",
      "done",
    ]);
    const calls = events.filter((e) => e.type === "tool_call");
    expect(calls[0]).toMatchObject({ name: "exec", arguments: { command: "ls" } });
    expect(calls[1]).toEqual({ type: "tool_call", id: "mine", name: "read", arguments: {} });
    expect(events.at(-1)).toEqual({
      type: "done",
      stopReason: "tool_calls",
      usage: { input: 100, output: 7, cacheRead: 0, cacheWrite: 0, total: 107 },
    });
  });

  it("generated tool call ids are unique across turns", async () => {
    const provider = new ScriptedProvider("demo", {
      turns: [{ toolCalls: [{ name: "a" }, { name: "b" }] }, { toolCalls: [{ name: "c" }] }],
    });
    const ids = [...(await play(provider)).events, ...(await play(provider)).events].flatMap((e) =>
      e.type === "tool_call" ? [e.id] : [],
    );
    expect(new Set(ids).size).toBe(3);
  });

  it("replaces {{lastUserMessage}} and {{lastToolResult}} from the request", async () => {
    const provider = new ScriptedProvider("demo", {
      turns: [{ text: ["You said: {{lastUserMessage}}. ", "Tool said: {{lastToolResult}}."] }],
    });
    const { text } = await play(provider, [
      { role: "user", content: "old question" },
      { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "exec", arguments: {} }] },
      { role: "toolResult", toolCallId: "c1", toolName: "exec", content: "README.md", isError: false },
      { role: "user", content: "what now?" },
    ]);
    expect(text).toBe("You said: what now?. Tool said: README.md.");
  });

  it("counts the images a request carries and describes the last one ({{imageCount}}, {{lastImage}})", async () => {
    const provider = new ScriptedProvider("demo", {
      turns: [
        { text: "{{imageCount}} image(s), last: {{lastImage}}; text: {{lastToolResult}}" },
        { text: "{{lastImage}}" },
      ],
    });
    const png = Buffer.from("not really a png").toString("base64");
    const { text } = await play(provider, [
      {
        role: "user",
        content: [
          { type: "text", text: "look" },
          { type: "image", mimeType: "image/jpeg", data: png },
        ],
      },
      { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "read", arguments: {} }] },
      {
        role: "toolResult",
        toolCallId: "c1",
        toolName: "read",
        content: [
          { type: "text", text: "shot.png: image/png 4000×3000 → sent as 1200×900" },
          { type: "image", mimeType: "image/png", data: png, width: 1200, height: 900 },
        ],
        isError: false,
      },
    ]);
    expect(text).toBe(
      "2 image(s), last: image/png 1200×900 16 bytes; text: shot.png: image/png 4000×3000 → sent as 1200×900",
    );
    expect((await play(provider)).text).toBe("none");
  });

  it("a function source decides each turn from the request", async () => {
    const provider = new ScriptedProvider("fn", (req, index) => ({
      text: `#${index} ${req.messages.length} messages`,
    }));
    expect((await play(provider)).text).toBe("#0 1 messages");
    expect((await play(provider)).text).toBe("#1 1 messages");
  });
});

describe("ScriptedProvider: errors", () => {
  it("an error turn surfaces as a ProviderError of the scripted kind", async () => {
    const provider = new ScriptedProvider("demo", {
      turns: [{ error: { kind: "rate_limit", message: "slow down", status: 429 } }],
    });
    const { error, events } = await play(provider);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ kind: "rate_limit", status: 429, retryable: true });
    expect((error as Error).message).toBe("demo: slow down");
    expect(events).toEqual([]);
  });

  it("afterChunks lets that many chunks through before failing", async () => {
    const provider = new ScriptedProvider("demo", {
      turns: [{ text: ["one ", "two ", "three"], error: { kind: "server", message: "stream cut", afterChunks: 2 } }],
    });
    const { text, error, events } = await play(provider);
    expect(text).toBe("one two ");
    expect((error as ProviderError).kind).toBe("server");
    expect(events.some((e) => e.type === "done")).toBe(false);
  });

  it("scripts what a retry policy reads: the server's retry-after and whether output came first", async () => {
    const provider = new ScriptedProvider("demo", {
      turns: [
        { error: { kind: "rate_limit", message: "slow down", retryAfterMs: 1500 } },
        { text: ["one ", "two"], error: { kind: "network", message: "reset", afterChunks: 1 } },
      ],
    });
    expect((await play(provider)).error).toMatchObject({ retryAfterMs: 1500, afterOutput: false, retryable: true });
    expect((await play(provider)).error).toMatchObject({ kind: "network", afterOutput: true, retryable: false });
  });

  it("rejects a script whose retryAfterMs is not a delay, naming the field", () => {
    expect(() => new ScriptedProvider("demo", { turns: [{ error: { message: "x", retryAfterMs: -1 } }] })).toThrow(
      "turns[0].error.retryAfterMs must be a number of milliseconds (>= 0)",
    );
  });
});

describe("ScriptedProvider: delays", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("delayMs holds the first chunk back for that long", async () => {
    const provider = new ScriptedProvider("demo", { turns: [{ text: "late", delayMs: 5000 }] });
    let text = "";
    const done = (async () => {
      for await (const ev of provider.stream(request())) if (ev.type === "text_delta") text += ev.delta;
    })();
    await vi.advanceTimersByTimeAsync(4999);
    expect(text).toBe("");
    await vi.advanceTimersByTimeAsync(1);
    await done;
    expect(text).toBe("late");
  });

  it("an abort during delayMs ends the call at once with an aborted ProviderError", async () => {
    const provider = new ScriptedProvider("demo", { turns: [{ text: "never", delayMs: 5000 }] });
    const controller = new AbortController();
    const result = play(provider, undefined, controller.signal);
    await vi.advanceTimersByTimeAsync(100);
    controller.abort();
    const { error, text } = await result;
    expect(text).toBe("");
    expect((error as ProviderError).kind).toBe("aborted");
    expect(vi.getTimerCount()).toBe(0); // the delay's timer is gone, nothing keeps the process alive
  });

  it("an abort between chunks (chunkDelayMs) stops the stream after the chunks already sent", async () => {
    const provider = new ScriptedProvider("demo", { turns: [{ text: ["a", "b", "c"], chunkDelayMs: 1000 }] });
    const controller = new AbortController();
    const result = play(provider, undefined, controller.signal);
    await vi.advanceTimersByTimeAsync(1500);
    controller.abort();
    const { error, text } = await result;
    expect(text).toBe("ab");
    expect((error as ProviderError).kind).toBe("aborted");
  });

  it("an already-aborted request never plays (and does not use up) a turn", async () => {
    const provider = new ScriptedProvider("demo", { turns: [{ text: "first" }] });
    const controller = new AbortController();
    controller.abort();
    expect((await play(provider, undefined, controller.signal)).error).toBeInstanceOf(ProviderError);
    expect((await play(provider)).text).toBe("first");
  });
});

describe("ScriptedProvider: when the script runs out", () => {
  const turns = [{ text: "A" }, { text: "B" }];
  const texts = async (script: Script, calls: number) => {
    const provider = new ScriptedProvider("demo", script);
    const out: string[] = [];
    for (let i = 0; i < calls; i++) {
      const r = await play(provider);
      out.push(r.error ? `error: ${(r.error as Error).message}` : r.text);
    }
    return out;
  };

  it("cycle starts over", async () => {
    expect(await texts({ turns, whenDone: "cycle" }, 5)).toEqual(["A", "B", "A", "B", "A"]);
  });

  it("repeat-last keeps playing the last turn", async () => {
    expect(await texts({ turns, whenDone: "repeat-last" }, 4)).toEqual(["A", "B", "B", "B"]);
  });

  it("error fails the call, saying the script is exhausted", async () => {
    expect(await texts({ turns, whenDone: "error" }, 3)).toEqual([
      "A",
      "B",
      "error: demo: script exhausted after 2 turns",
    ]);
  });

  it("by default it apologizes in plain text", async () => {
    expect((await texts({ turns }, 3))[2]).toBe("(the scripted model has no more turns)");
  });
});

describe("script files", () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-script-"));
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const write = (name: string, text: string) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  };

  it("a JSON5 script file (comments, trailing commas) loads and plays", async () => {
    const file = write("ok.json5", "// a demo\n{ turns: [ { text: 'from file', }, ], whenDone: 'cycle' }\n");
    const provider = createScriptedProvider({ id: "s", api: "scripted", models: [], script: file });
    expect((await play(provider)).text).toBe("from file");
  });

  it("a tool call without a name is refused, naming the file and the field", () => {
    const file = write("noname.json5", "{ turns: [ { text: 'ok' }, { toolCalls: [ { arguments: {} } ] } ] }");
    expect(() => loadScriptFile(file)).toThrow(file);
    expect(() => loadScriptFile(file)).toThrow("turns[1].toolCalls[0].name");
  });

  it.each([
    ["text", "{ turns: [ { text: 42 } ] }", "turns[0].text"],
    ["text chunks", "{ turns: [ { text: ['ok', 7] } ] }", "turns[0].text"],
    ["delayMs", "{ turns: [ { text: 'x', delayMs: '5s' } ] }", "turns[0].delayMs"],
    ["chunkDelayMs", "{ turns: [ { text: 'x', chunkDelayMs: -1 } ] }", "turns[0].chunkDelayMs"],
    ["error.kind", "{ turns: [ { error: { kind: 'ratelimit', message: 'x' } } ] }", "turns[0].error.kind"],
    ["error.message", "{ turns: [ { error: { kind: 'server' } } ] }", "turns[0].error.message"],
    [
      "tool arguments",
      "{ turns: [ { toolCalls: [ { name: 'exec', arguments: 'ls' } ] } ] }",
      "turns[0].toolCalls[0].arguments",
    ],
    ["whenDone", "{ turns: [], whenDone: 'loop' }", "whenDone"],
  ])("a bad %s is refused, naming the file and the field", (_what, text, field) => {
    const file = write("bad.json5", text);
    let error: unknown;
    try {
      loadScriptFile(file);
    } catch (err) {
      error = err;
    }
    expect(error, "loading must fail").toBeInstanceOf(Error);
    expect((error as Error).message).toContain(file);
    expect((error as Error).message).toContain(field);
  });

  it("a script without turns is refused", () => {
    const file = write("empty.json5", "{ steps: [] }");
    expect(() => loadScriptFile(file)).toThrow(/expected \{ turns: \[\.\.\.\] \}/);
  });

  it("a JSON5 syntax error names the file", () => {
    const file = write("broken.json5", "{ turns: [ ");
    expect(() => loadScriptFile(file)).toThrow(file);
  });

  it("a missing script file names the file", () => {
    const file = path.join(dir, "absent.json5");
    expect(() => loadScriptFile(file)).toThrow(file);
  });

  it("a scripted provider with no script says which config key is missing", () => {
    expect(() => createScriptedProvider({ id: "demo", api: "scripted", models: [] })).toThrow(
      "models.providers.demo.script",
    );
  });
});
