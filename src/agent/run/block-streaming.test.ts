import { afterEach, describe, expect, it } from "vitest";
import { AgentEventBus } from "../../infra/events.js";
import type { AgentEvent, BlockData } from "../../protocol/agent-events.js";
import { runEmitter } from "./events.js";
import { ReplyBlocks } from "./reply-blocks.js";
import { type RunHarness, startRunHarness } from "./run-harness.test-support.js";

const harnesses: RunHarness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

async function harness(defaults: Record<string, unknown> = {}): Promise<RunHarness> {
  const h = await startRunHarness({
    config: () => ({ agents: { defaults: { model: { primary: "fake/m" }, ...defaults } } }),
  });
  harnesses.push(h);
  return h;
}

/** A ~5,000-char reply: prose paragraphs around a fenced code block longer than one block. */
function longReply(): string {
  const para = (n: number) =>
    Array.from({ length: n }, (_, i) => `Sentence ${i} of this paragraph says something useful.`).join(" ");
  const code = Array.from({ length: 55 }, (_, i) => `  const value${i} = compute(${i}, "input-${i}");`).join("\n");
  const text = `${para(16)}\n\n${para(12)}\n\n\`\`\`ts title=demo.ts\n${code}\n\`\`\`\n\n${para(14)}\n\n${para(6)}`;
  return text;
}

/** The text in pieces of `n` chars, as the model would stream it. */
const pieces = (text: string, n = 40) =>
  Array.from({ length: Math.ceil(text.length / n) }, (_, i) => text.slice(i * n, (i + 1) * n));

function fencesBalanced(text: string): boolean {
  let open: string | undefined;
  for (const line of text.split("\n")) {
    const m = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
    if (!m) continue;
    if (!open) open = m[1];
    else if (m[1][0] === open[0] && m[1].length >= open.length && m[2].trim() === "") open = undefined;
  }
  return open === undefined;
}

const blocksOf = (events: AgentEvent[], runId: string): BlockData[] =>
  events.flatMap((e) => (e.runId === runId && e.stream === "block" ? [e.data] : []));

/** The blocks' text with the fence lines the chunker added at splits taken off (a close at the end, a reopen at the start). */
function withoutSyntheticFences(blocks: BlockData[]): string {
  return blocks
    .map((b, i) => {
      let t = b.text;
      if (i > 0 && /\n(`{3,}|~{3,})$/.test(blocks[i - 1].text) && /^(`{3,}|~{3,})[^\n]*\n/.test(t))
        t = t.replace(/^[^\n]*\n/, "");
      if (i < blocks.length - 1 && /\n(`{3,}|~{3,})$/.test(t) && /^(`{3,}|~{3,})[^\n]*\n/.test(blocks[i + 1].text))
        // the split was at a newline of the code (no hard split here), so the close is just the marker
        t = t.replace(/(`{3,}|~{3,})$/, "");
      return t;
    })
    .join("");
}

describe("block streaming through a real run", () => {
  it("blockStreamingDefault on: a 5,000-char reply with a code fence arrives as balanced blocks, not repeated in the final", async () => {
    const h = await harness({ blockStreamingDefault: "on" });
    const text = longReply();
    expect(text.length).toBeGreaterThan(4500);
    h.enqueue({ text: pieces(text) });
    const final = await h.send("write it");
    expect(final.status).toBe("ok");
    const blocks = blocksOf(h.events, final.runId);
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    expect(blocks.map((b) => b.index)).toEqual(blocks.map((_, i) => i));
    for (const [i, b] of blocks.entries()) {
      expect(fencesBalanced(b.text), b.text).toBe(true);
      expect(b.text.length).toBeLessThanOrEqual(1200);
      if (i < blocks.length - 1) expect(b.text.length).toBeGreaterThanOrEqual(800);
    }
    // the code block was longer than a block: it was closed and reopened with its info string
    expect(blocks.some((b) => b.text.startsWith("```ts title=demo.ts\n"))).toBe(true);
    expect(withoutSyntheticFences(blocks)).toBe(text);
    // the blocks delivered the whole reply: the final payloads do not repeat any of it
    expect(final.result.payloads).toEqual([]);
    const start = h.events.find((e) => e.runId === final.runId && e.stream === "lifecycle");
    expect(start?.data).toMatchObject({ phase: "start", blockStreaming: "text_end" });
  });

  it("blockStreamingBreak text_end sends blocks while the text streams; message_end only once the message is complete", async () => {
    const text = longReply();
    const order = async (defaults: Record<string, unknown>) => {
      // the fake model writes the whole reply at once; with coalescing on, the provider would hand it on as one
      // delta (a batch per stream beat), and there would be no "while the text streams" to look at
      const h = await harness({ blockStreamingDefault: "on", streamCoalesceMs: 0, ...defaults });
      h.enqueue({ text: pieces(text) });
      const final = await h.send("write it");
      const run = h.events.filter((e) => e.runId === final.runId);
      const lastDelta = Math.max(...run.filter((e) => e.stream === "assistant").map((e) => e.seq));
      const blockSeqs = run.filter((e) => e.stream === "block").map((e) => e.seq);
      return { before: blockSeqs.filter((s) => s < lastDelta).length, total: blockSeqs.length, final };
    };
    const streaming = await order({ blockStreamingBreak: "text_end" });
    expect(streaming.before).toBeGreaterThanOrEqual(3);
    const atEnd = await order({ blockStreamingBreak: "message_end" });
    expect(atEnd.before).toBe(0);
    expect(atEnd.total).toBe(streaming.total);
    expect(atEnd.final.result.payloads).toEqual([]);
  });

  it("the per-run blockStreaming param beats blockStreamingDefault, both ways", async () => {
    const h = await harness({ blockStreamingDefault: "on" });
    h.enqueue({ text: "A short answer." }, { text: "Another short answer." });
    const off = await h.send("one", { blockStreaming: "off" });
    expect(blocksOf(h.events, off.runId)).toEqual([]);
    expect(off.result.payloads.map((p) => p.text)).toEqual(["A short answer."]);

    const h2 = await harness();
    h2.enqueue({ text: "A short answer." });
    const on = await h2.send("two", { blockStreaming: "on" });
    expect(blocksOf(h2.events, on.runId).map((b) => b.text)).toEqual(["A short answer."]);
    expect(on.result.payloads).toEqual([]);
  });

  it("without block streaming no block events are sent and the final carries the reply", async () => {
    const h = await harness();
    h.enqueue({ text: pieces(longReply()) });
    const final = await h.send("write it");
    expect(blocksOf(h.events, final.runId)).toEqual([]);
    expect(final.result.payloads.map((p) => p.text)).toEqual([longReply()]);
  });

  it("a reply that is exactly NO_REPLY sends no block; a trailing NO_REPLY is not sent", async () => {
    const h = await harness({ blockStreamingDefault: "on" });
    h.enqueue({ text: ["NO_", "REPLY"] }, { text: ["All done.", " NO_REPLY"] });
    const silent = await h.send("quiet");
    expect(blocksOf(h.events, silent.runId)).toEqual([]);
    expect(silent.result.payloads).toEqual([]);
    const trailing = await h.send("done?");
    expect(blocksOf(h.events, trailing.runId).map((b) => b.text)).toEqual(["All done."]);
    expect(trailing.result.payloads).toEqual([]);
  });

  it("text before a tool call goes out as its own block; the final answer's blocks are not repeated", async () => {
    const h = await harness({ blockStreamingDefault: "on" });
    h.enqueue(
      { text: "Let me check the files.", toolCalls: [{ id: "c1", name: "read", arguments: { path: "missing.txt" } }] },
      { text: "The file does not exist." },
    );
    const final = await h.send("read it");
    expect(blocksOf(h.events, final.runId).map((b) => b.text)).toEqual([
      "Let me check the files.",
      "The file does not exist.",
    ]);
    // no fallback "read failed" reply either: the blocks were a visible reply
    expect(final.result.payloads).toEqual([]);
  });
});

describe("reply blocks: idle coalescing", () => {
  function setup(mode: "text_end" | "message_end") {
    let now = 0;
    const timers = new Set<{ at: number; fn: () => void }>();
    const clock = {
      now: () => now,
      setTimeout: (fn: () => void, ms: number) => {
        const t = { at: now + ms, fn };
        timers.add(t);
        return t;
      },
      clearTimeout: (h: unknown) => void timers.delete(h as { at: number; fn: () => void }),
    };
    const advance = (ms: number) => {
      now += ms;
      for (const t of [...timers].filter((x) => x.at <= now)) {
        timers.delete(t);
        t.fn();
      }
    };
    const bus = new AgentEventBus({ now: clock.now });
    const blocks: BlockData[] = [];
    bus.subscribe((e) => {
      if (e.stream === "block") blocks.push(e.data);
    });
    const rb = new ReplyBlocks(mode, runEmitter(bus, "r", "agent:main:s"), clock);
    return { rb, blocks, advance };
  }

  it("text_end: short text that stands idle for a second goes out as a block; a new delta restarts the wait", () => {
    const { rb, blocks, advance } = setup("text_end");
    rb.onDelta("Looking into it");
    advance(900);
    rb.onDelta("...\n");
    advance(900);
    expect(blocks).toEqual([]);
    advance(100);
    expect(blocks).toEqual([{ index: 0, text: "Looking into it...\n" }]);
    rb.onDelta("Found it.");
    rb.onMessageEnd("Looking into it...\nFound it.");
    expect(blocks.map((b) => b.text)).toEqual(["Looking into it...\n", "Found it."]);
    expect(rb.delivered()).toBe("Looking into it...\nFound it.");
  });

  it("text_end: an idle block keeps back an end that could still become NO_REPLY", () => {
    const { rb, blocks, advance } = setup("text_end");
    rb.onDelta("Noted. NO_REP");
    advance(1000);
    expect(blocks.map((b) => b.text)).toEqual(["Noted. "]);
    rb.onDelta("LY");
    rb.onMessageEnd("Noted. NO_REPLY");
    expect(blocks.map((b) => b.text)).toEqual(["Noted. "]);
  });

  it("message_end: nothing goes out while idle; the message's blocks come when it is complete", () => {
    const { rb, blocks, advance } = setup("message_end");
    rb.onDelta("Thinking about it");
    advance(5000);
    expect(blocks).toEqual([]);
    rb.onMessageEnd("Thinking about it");
    expect(blocks.map((b) => b.text)).toEqual(["Thinking about it"]);
  });

  it("after close (the run ended) no idle block follows", () => {
    const { rb, blocks, advance } = setup("text_end");
    rb.onDelta("half an answer");
    rb.close();
    advance(2000);
    expect(blocks).toEqual([]);
  });
});
