import { afterEach, describe, expect, it } from "vitest";
import { coalescingEmitter } from "../agent/run/delta-coalescer.js";
import { isSummaryRequest, type RunHarness, startRunHarness } from "../agent/run/run-harness.test-support.js";
import { Cadence } from "../infra/cadence.js";
import type { Clock } from "../infra/clock.js";
import type { AgentEvent, AgentEventData, AgentStream, AssistantData } from "../protocol/agent-events.js";
import type { ChatEventPayload } from "../protocol/payloads.js";
import { ManualClock } from "../testing/manual-clock.js";
import { ChatProjector } from "./chat-projection.js";
import { DEFAULT_CHAT_DELTA_INTERVAL_MS } from "./server.js";

/** Timers that fire only when the test moves time on. */
function manualClock(): Clock & { advance(ms: number): void } {
  let now = 0;
  const timers = new Set<{ at: number; fn: () => void }>();
  return {
    now: () => now,
    setTimeout(fn, ms) {
      const t = { at: now + ms, fn };
      timers.add(t);
      return t;
    },
    clearTimeout(h) {
      timers.delete(h as { at: number; fn: () => void });
    },
    advance(ms) {
      const target = now + ms;
      for (;;) {
        const due = [...timers].filter((t) => t.at <= target).sort((a, b) => a.at - b.at)[0];
        if (!due) break;
        timers.delete(due);
        now = due.at;
        due.fn();
      }
      now = target;
    },
  };
}

/** Feeds run r1's events to a projector, numbered as the run would number them, stamped with the clock's time. */
function runFeed(chat: ChatProjector, clock: Pick<Clock, "now">) {
  let seq = 0;
  return <S extends AgentStream>(stream: S, data: AgentEventData[S]) =>
    chat.onAgentEvent({
      runId: "r1",
      seq: ++seq,
      stream,
      ts: clock.now(),
      sessionKey: "agent:main:s",
      data,
    } as AgentEvent);
}

/** A projector fed by hand, recording each chat payload with the time it went out. */
function projector(intervalMs = DEFAULT_CHAT_DELTA_INTERVAL_MS) {
  const clock = manualClock();
  const sent: Array<ChatEventPayload & { at: number }> = [];
  const chat = new ChatProjector({ emit: (p) => sent.push({ ...p, at: clock.now() }), clock, intervalMs });
  const emit = runFeed(chat, clock);
  let text = "";
  const delta = (d: string) => {
    text += d;
    emit("assistant", { text, delta: d });
  };
  const end = () =>
    emit("lifecycle", {
      phase: "end",
      startedAt: 0,
      endedAt: clock.now(),
      status: "ok",
      stopReason: "stop",
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    });
  type Delta = Extract<ChatEventPayload, { state: "delta" }> & { at: number };
  type Final = Extract<ChatEventPayload, { state: "final" }> & { at: number };
  const deltas = () => sent.filter((p): p is Delta => p.state === "delta");
  const final = () => sent.find((p): p is Final => p.state === "final");
  const finalText = () => {
    const m = final()?.message as { content: Array<{ text: string }> } | undefined;
    return m?.content[0]?.text;
  };
  return { clock, sent, emit, delta, end, deltas, final, finalText };
}

describe("chat projection: bytes per token", () => {
  /** chat payload bytes of a reply of `tokens` 4-character tokens, one token per 20 ms */
  function chatBytes(tokens: number) {
    const p = projector();
    for (let i = 0; i < tokens; i++) {
      p.delta(`t${String(i % 100).padStart(2, "0")} `);
      p.clock.advance(20);
    }
    p.end();
    return { bytes: p.sent.reduce((n, d) => n + JSON.stringify(d).length, 0), p };
  }

  it("a reply twice as long costs chat clients about twice the bytes, not four times (the message rides on checkpoints)", () => {
    const short = chatBytes(2000).bytes;
    const long = chatBytes(4000).bytes;
    expect(long / short).toBeLessThan(2.3);
  });

  it("a client that keeps only the latest whole message, then appends deltas, ends with exactly the reply", () => {
    const { p } = chatBytes(3000);
    let shown = "";
    let withMessage = 0;
    for (const d of p.deltas()) {
      const m = d.message as { content: Array<{ text: string }> } | undefined;
      if (m) {
        withMessage++;
        shown = m.content[0].text;
      } else shown += d.deltaText;
    }
    expect(withMessage).toBeGreaterThan(1);
    expect(withMessage).toBeLessThan(p.deltas().length / 4);
    expect(shown).toBe(p.finalText());
  });
});

describe("chat projection: pacing", () => {
  it("the default pace is one chat delta per 75 ms", () => {
    expect(DEFAULT_CHAT_DELTA_INTERVAL_MS).toBe(75);
  });

  it("a token stream becomes at most one chat delta per 75 ms, the first at once, none lost", () => {
    const p = projector();
    for (let i = 0; i < 40; i++) {
      p.delta(`w${i} `);
      p.clock.advance(10);
    }
    p.end();
    const ds = p.deltas();
    expect(ds[0].at).toBe(0);
    // the last delta is the rest, flushed together with the final; every other one is 75 ms after the one before
    const paced = ds.slice(0, -1);
    for (let i = 1; i < paced.length; i++) expect(paced[i].at - paced[i - 1].at).toBeGreaterThanOrEqual(75);
    expect(ds.at(-1)?.at).toBe(p.final()?.at);
    // 400 ms of tokens: the first delta, one per 75 ms after it (5), and the rest with the final
    expect(ds.length).toBe(7);
    expect(ds.map((d) => d.deltaText).join("")).toBe(Array.from({ length: 40 }, (_, i) => `w${i} `).join(""));
  });
});

describe("chat projection: the silent token", () => {
  it("chat clients briefly saw NO_ before an empty final", () => {
    const p = projector();
    for (const d of ["NO_", "REP", "LY"]) {
      p.delta(d);
      p.clock.advance(100);
    }
    p.end();
    expect(p.deltas()).toEqual([]);
    expect(p.final()).toBeDefined();
    expect(p.final()?.message).toBeUndefined();
  });

  it("chat clients briefly saw no_re before an empty final (any case, with punctuation around it)", () => {
    const p = projector();
    for (const d of ["**", "no_re", "ply", "**\n"]) {
      p.delta(d);
      p.clock.advance(100);
    }
    p.end();
    expect(p.deltas()).toEqual([]);
    expect(p.final()?.message).toBeUndefined();
  });

  it("a fragment that turns out not to be the token is sent once it cannot become it", () => {
    const p = projector();
    p.delta("NO_");
    p.clock.advance(100);
    expect(p.deltas()).toEqual([]);
    p.delta("WAY is that true");
    p.clock.advance(100);
    expect(p.deltas().map((d) => d.deltaText)).toEqual(["NO_WAY is that true"]);
  });

  it("the end of a longer reply that may become NO_REPLY is held back, and stripped from the final", () => {
    const p = projector();
    p.delta("Done. NO_");
    p.clock.advance(100);
    expect(p.deltas().map((d) => d.deltaText)).toEqual(["Done. "]);
    p.delta("REPLY");
    p.clock.advance(100);
    p.end();
    expect(p.deltas().map((d) => d.deltaText)).toEqual(["Done. "]);
    expect(p.finalText()).toBe("Done.");
  });
});

describe("chat projection: blocks", () => {
  it("a block-streamed run sends its blocks as chat deltas, not its tokens, and the final carries the whole reply", () => {
    const p = projector();
    p.emit("lifecycle", { phase: "start", startedAt: 0, blockStreaming: "text_end" });
    const a = "a".repeat(900);
    const b = "b".repeat(300);
    p.delta(a.slice(0, 450));
    p.delta(a.slice(450));
    p.emit("block", { index: 0, text: a });
    p.clock.advance(500);
    p.delta(b);
    p.emit("block", { index: 1, text: b });
    p.end();
    const ds = p.deltas();
    expect(ds.map((d) => d.deltaText)).toEqual([a, b]);
    // the first block carries the whole message; the next one only its own text (it grew the reply by < 512 chars)
    expect(ds[0].message).toMatchObject({ content: [{ type: "text", text: a }] });
    expect(ds[1].message).toBeUndefined();
    expect(p.finalText()).toBe(a + b);
  });

  it("a block that says replace restarts the chat message", () => {
    const p = projector();
    p.emit("lifecycle", { phase: "start", startedAt: 0, blockStreaming: "text_end" });
    p.emit("block", { index: 0, text: "thrown away" });
    p.emit("block", { index: 1, text: "kept", replace: true });
    const ds = p.deltas();
    expect(ds[1]).toMatchObject({ deltaText: "kept", replace: true, message: { content: [{ text: "kept" }] } });
  });
});

describe("chat projection of real runs", () => {
  const harnesses: RunHarness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });

  /** A session whose fourth question overflows once after some text was streamed: compaction, then a retry. */
  async function compactedRun(opts: { partial: string[]; full: string; blockStreaming?: "on" }) {
    let refusedOnce = false;
    const h = await startRunHarness({
      config: () => ({ agents: { defaults: { model: { primary: "fake/m" }, compaction: { keepRecentTokens: 100 } } } }),
      respond: (req) => {
        if (isSummaryRequest(req)) return { text: "Summary of the first turns." };
        const text = JSON.stringify(req.body.messages);
        if (text.includes("question four") && !refusedOnce) {
          refusedOnce = true;
          return {
            text: opts.partial,
            streamError: { code: "context_length_exceeded", message: "maximum context length exceeded" },
          };
        }
        return { text: text.includes("question four") ? opts.full : "ok ".repeat(200) };
      },
    });
    harnesses.push(h);
    for (const q of ["question one", "question two", "question three"]) expect((await h.send(q)).status).toBe("ok");
    const sent: ChatEventPayload[] = [];
    // interval 0: every delta goes out at once, so the partial text surely reached the client
    const chat = new ChatProjector({ emit: (p) => sent.push(p), clock: h.rt.clock, intervalMs: 0 });
    const off = h.rt.bus.subscribe((ev) => chat.onAgentEvent(ev));
    const final = await h.send("question four", opts.blockStreaming ? { blockStreaming: "on" } : {});
    off();
    return { h, final, sent };
  }

  it("a compaction after streamed text sends replace, and the client ends with only the retried answer", async () => {
    const { h, final, sent } = await compactedRun({ partial: ["Partial ", "answer"], full: "Full answer." });
    expect(final.status).toBe("ok");
    expect(h.events.some((e) => e.stream === "compaction" && e.runId === final.runId)).toBe(true);
    const deltas = sent.filter((p) => p.state === "delta") as Array<ChatEventPayload & { deltaText: string }>;
    expect(deltas.map((d) => d.deltaText).join("")).toContain("Partial answer");
    const restarted = deltas.find((d) => d.deltaText.startsWith("Full"));
    expect(restarted).toMatchObject({ replace: true, message: { content: [{ text: "Full answer." }] } });
    expect(sent.at(-1)).toMatchObject({ state: "final", message: { content: [{ text: "Full answer." }] } });
  });

  it("with block streaming, a compaction after a block was sent marks the next block replace", async () => {
    const partial = Array.from({ length: 30 }, (_, i) => `Partial sentence number ${i} goes on a while. `);
    const full = "The full answer.";
    const { final, sent, h } = await compactedRun({ partial, full, blockStreaming: "on" });
    expect(final.status).toBe("ok");
    const blocks = h.events.flatMap((e) => (e.runId === final.runId && e.stream === "block" ? [e.data] : []));
    expect(blocks[0].text).toMatch(/^Partial sentence number 0/);
    expect(blocks.at(-1)).toMatchObject({ text: full, replace: true });
    const deltas = sent.filter((p) => p.state === "delta");
    expect(deltas.at(-1)).toMatchObject({ deltaText: full, replace: true });
    // the blocks delivered the answer: the final payloads do not repeat it
    expect(final.result.payloads).toEqual([]);
  });
});

describe("chat deltas on the runtime's stream beat", () => {
  it("each chat delta leaves in the same beat as an assistant delta, right after it, carrying its text, at most every 75 ms", () => {
    const clock = new ManualClock(0);
    const cadence = new Cadence(clock, 40);
    const beat = cadence.lane("r1");
    const out: Array<{ kind: "agent" | "chat"; at: number; text: string }> = [];
    const chat = new ChatProjector({
      emit: (p) => {
        if (p.state === "delta") out.push({ kind: "chat", at: clock.now(), text: p.deltaText ?? "" });
      },
      clock,
      intervalMs: DEFAULT_CHAT_DELTA_INTERVAL_MS,
      beat: cadence,
    });
    const feed = runFeed(chat, clock);
    // what the broadcaster does with each event the coalescer lets out: the agent frame, then the chat projection
    const events = coalescingEmitter(
      {
        emit: (stream, data) => {
          out.push({ kind: "agent", at: clock.now(), text: (data as AssistantData).delta });
          feed(stream, data);
        },
      },
      beat,
    );
    let text = "";
    for (let i = 0; i < 40; i++) {
      // a token every 20 ms, as a model streaming 50 tokens a second
      const piece = ` t${i}`;
      text += piece;
      events.emit("assistant", { delta: piece });
      for (let ms = 0; ms < 20; ms++) clock.advance(1);
    }
    for (let ms = 0; ms < 200; ms++) clock.advance(1);
    const agent = out.filter((e) => e.kind === "agent");
    const chatDeltas = out.filter((e) => e.kind === "chat");
    expect(agent.map((e) => e.text).join("")).toBe(text);
    expect(chatDeltas.map((e) => e.text).join("")).toBe(text);
    for (const [i, c] of chatDeltas.entries()) {
      const k = out.indexOf(c);
      // right after the assistant delta of its beat (the same write on the socket), and everything it carried
      expect(out[k - 1]).toMatchObject({ kind: "agent", at: c.at });
      expect(text.indexOf(c.text) + c.text.length).toBe(
        out
          .slice(0, k)
          .filter((e) => e.kind === "agent")
          .map((e) => e.text)
          .join("").length,
      );
      if (i > 0) expect(c.at - chatDeltas[i - 1].at).toBeGreaterThanOrEqual(DEFAULT_CHAT_DELTA_INTERVAL_MS);
    }
    expect(chatDeltas.length).toBeGreaterThan(5);
  });

  it("a stream that pauses still gets its pending text as a chat delta from a later beat", () => {
    const clock = new ManualClock(0);
    const cadence = new Cadence(clock, 40);
    const sent: Array<{ text: string; at: number }> = [];
    const chat = new ChatProjector({
      emit: (p) => {
        if (p.state === "delta") sent.push({ text: p.deltaText ?? "", at: clock.now() });
      },
      clock,
      intervalMs: DEFAULT_CHAT_DELTA_INTERVAL_MS,
      beat: cadence,
    });
    const feed = runFeed(chat, clock);
    const delta = (d: string) => feed("assistant", { delta: d });
    delta("Hello"); // the first delta goes out at once
    clock.advance(10);
    delta(", world"); // too soon after the first: pending
    // then the model goes quiet: no assistant delta will carry it
    for (let ms = 0; ms < 300; ms++) clock.advance(1);
    expect(sent.map((s) => s.text)).toEqual(["Hello", ", world"]);
    expect(sent[1].at - sent[0].at).toBeGreaterThanOrEqual(DEFAULT_CHAT_DELTA_INTERVAL_MS);
    expect(sent[1].at).toBeLessThanOrEqual(DEFAULT_CHAT_DELTA_INTERVAL_MS + 2 * 40);
  });
});
