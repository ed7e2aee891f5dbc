import { afterEach, describe, expect, it } from "vitest";
import type { AgentEvent, AssistantData } from "../../protocol/agent-events.js";
import { type RunHarness, startRunHarness } from "./run-harness.test-support.js";

const harnesses: RunHarness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

/**
 * These tests pin the checkpoint rule per model chunk, so coalescing is off (`streamCoalesceMs: 0`) and every chunk
 * is its own event; merged deltas and their checkpoints are covered in delta-coalescer.test.ts.
 */
async function harness(): Promise<RunHarness> {
  const h = await startRunHarness({
    config: () => ({ agents: { defaults: { model: { primary: "fake/m" }, streamCoalesceMs: 0 } } }),
  });
  harnesses.push(h);
  return h;
}

/** A reply of `n` streamed tokens of about 5 characters each, as a model streams them (one per chunk). */
const tokens = (n: number) => Array.from({ length: n }, (_, i) => ` w${(i % 997).toString(36).padStart(3, "0")}`);

const assistantEvents = (h: RunHarness, runId: string) =>
  h.events.filter(
    (e): e is Extract<AgentEvent, { stream: "assistant" }> => e.runId === runId && e.stream === "assistant",
  );

/** What the gateway puts on the wire for these events: each one serialized once (broadcast.ts). */
const wireBytes = (events: AgentEvent[]) => events.reduce((sum, e) => sum + Buffer.byteLength(JSON.stringify(e)), 0);

/** What a client shows after reading `data` in order: it starts from a checkpoint's `text`, then appends deltas. */
function shown(data: AssistantData[]): string | undefined {
  let text: string | undefined;
  for (const d of data) {
    if (d.text !== undefined) text = d.text;
    else if (text !== undefined) text += d.delta;
  }
  return text;
}

describe("assistant events stream a long reply in linear wire bytes", () => {
  it("a 4,000-token reply costs at most 2.2 × the assistant-event bytes of a 2,000-token reply", async () => {
    const h = await harness();
    h.enqueue({ text: tokens(2000) });
    const short = await h.send("write 2,000 tokens");
    h.enqueue({ text: tokens(4000) });
    const long = await h.send("write 4,000 tokens");
    expect(short.status).toBe("ok");
    expect(long.status).toBe("ok");

    const shortEvents = assistantEvents(h, short.runId);
    const longEvents = assistantEvents(h, long.runId);
    expect(shortEvents).toHaveLength(2000);
    expect(longEvents).toHaveLength(4000);
    const ratio = wireBytes(longEvents) / wireBytes(shortEvents);
    expect(ratio).toBeGreaterThan(1.8);
    expect(ratio).toBeLessThanOrEqual(2.2);
    // and per token it is a small constant: the event envelope, the delta, and the checkpoints' share
    expect(wireBytes(longEvents) / 4000).toBeLessThan(400);
  });

  it("only checkpoints carry the cumulative text, and every checkpoint is the reply so far", async () => {
    const h = await harness();
    const pieces = tokens(2000);
    h.enqueue({ text: pieces });
    const final = await h.send("write");
    const data = assistantEvents(h, final.runId).map((e) => e.data);
    const withText = data.filter((d) => d.text !== undefined);
    expect(withText.length).toBeGreaterThan(1);
    expect(withText.length).toBeLessThan(40);
    let soFar = "";
    for (const [i, d] of data.entries()) {
      soFar += d.delta;
      expect(d.delta).toBe(pieces[i]);
      if (d.text !== undefined) expect(d.text).toBe(soFar);
    }
    expect(data[0].text).toBe(pieces[0]);
  });
});

describe("a client that joins mid-stream", () => {
  it("shows the whole reply from the next checkpoint on, and ends with exactly the final text", async () => {
    const h = await harness();
    const pieces = tokens(2000);
    h.enqueue({ text: pieces });
    const final = await h.send("write");
    const data = assistantEvents(h, final.runId).map((e) => e.data);
    const reply = pieces.join("");
    expect(final.result.payloads.map((p) => p.text)).toEqual([reply.trim()]);
    // joining at any point: after the first checkpoint it reads, it has the full reply by the last event
    for (const joinAt of [1, 17, 499, 1000, 1500]) {
      const seen = data.slice(joinAt);
      const firstCheckpoint = seen.findIndex((d) => d.text !== undefined);
      expect(firstCheckpoint, `joined at ${joinAt}`).toBeGreaterThanOrEqual(0);
      // it waits no longer than a quarter of what was said before it joined (or the minimum step)
      const saidBefore = data.slice(0, joinAt).reduce((n, d) => n + d.delta.length, 0);
      const waited = seen.slice(0, firstCheckpoint).reduce((n, d) => n + d.delta.length, 0);
      expect(waited, `joined at ${joinAt}`).toBeLessThanOrEqual(Math.max(512, saidBefore * 0.25) + 5);
      expect(shown(seen), `joined at ${joinAt}`).toBe(reply);
    }
  });

  it("a second assistant message in the same run starts with a checkpoint of its own", async () => {
    const h = await harness();
    h.enqueue(
      { text: ["Let me ", "look."], toolCalls: [{ name: "read", arguments: { path: "nope.txt" } }] },
      { text: ["It is ", "not there."] },
    );
    const final = await h.send("read nope.txt");
    expect(final.status).toBe("ok");
    const data = assistantEvents(h, final.runId).map((e) => e.data);
    expect(data.map((d) => d.text)).toEqual(["Let me ", undefined, "It is ", undefined]);
    expect(data.map((d) => d.delta).join("")).toBe("Let me look.It is not there.");
  });
});

describe("streamed reasoning costs linear wire bytes too", () => {
  it("4,000 reasoning tokens cost at most 2.2 × the thinking-event bytes of 2,000, and the deltas rebuild the block", async () => {
    const h = await harness();
    h.enqueue({ thinking: tokens(2000), text: "ok" });
    const short = await h.send("think 2,000 tokens", { reasoningLevel: "stream" });
    h.enqueue({ thinking: tokens(4000), text: "ok" });
    const long = await h.send("think 4,000 tokens", { reasoningLevel: "stream" });
    const thinkingOf = (runId: string) =>
      h.events.filter(
        (e): e is Extract<AgentEvent, { stream: "thinking" }> => e.runId === runId && e.stream === "thinking",
      );
    const ratio = wireBytes(thinkingOf(long.runId)) / wireBytes(thinkingOf(short.runId));
    expect(ratio).toBeGreaterThan(1.8);
    expect(ratio).toBeLessThanOrEqual(2.2);
    expect(
      thinkingOf(long.runId)
        .map((e) => e.data.delta)
        .join(""),
    ).toBe(tokens(4000).join(""));
    expect(thinkingOf(long.runId)[0].data.text).toBe(tokens(4000)[0]);
  });
});
