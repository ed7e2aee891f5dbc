import { afterEach, describe, expect, it } from "vitest";
import type { AgentEvent, CompactionData, LifecycleData } from "../../protocol/agent-events.js";
import { type CapturedRequest, type FakeTurn, openAIErrorTurn } from "../../testing/fake-model-server.js";
import { isSummaryRequest, type RunHarness, requestTokens, startRunHarness } from "./run-harness.test-support.js";

const harnesses: RunHarness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

async function harness(opts: Parameters<typeof startRunHarness>[0]): Promise<RunHarness> {
  const h = await startRunHarness(opts);
  harnesses.push(h);
  return h;
}

const lifecycle = (events: AgentEvent[], phase: LifecycleData["phase"]) =>
  events.flatMap((e) => (e.stream === "lifecycle" && e.data.phase === phase ? [e.data] : []));
const compactions = (events: AgentEvent[]): CompactionData[] =>
  events.flatMap((e) => (e.stream === "compaction" ? [e.data] : []));

/** A model with a hard window: a request over it is refused as the real APIs refuse it. */
function windowedModel(window: number, answer: (req: CapturedRequest) => FakeTurn) {
  const oversized: number[] = [];
  const respond = (req: CapturedRequest): FakeTurn => {
    const tokens = requestTokens(req);
    if (tokens > window) {
      oversized.push(tokens);
      return openAIErrorTurn(400, `This model's maximum context length is ${window} tokens`, "context_length_exceeded");
    }
    return { ...answer(req), usage: { input: tokens, output: 60 } };
  };
  return { respond, oversized };
}

describe("compaction keeps long sessions going", () => {
  it("a 40-turn session on a 4,000-token window completes every turn, no request over the window", async () => {
    const model = windowedModel(4000, (req) =>
      isSummaryRequest(req)
        ? { text: "Summary: the user has been listing numbered facts; the assistant acknowledged each one." }
        : { text: `Noted. ${"I will keep this fact in mind for later questions. ".repeat(4)}` },
    );
    const h = await harness({
      window: 4000,
      respond: model.respond,
      config: () => ({ agents: { defaults: { model: { primary: "fake/m" }, compaction: { keepRecentTokens: 600 } } } }),
    });
    for (let i = 1; i <= 40; i++) {
      const final = await h.send(`Fact ${i}: the code word for day ${i} is ${"lorem ipsum ".repeat(24)}.`);
      expect(final.status, `turn ${i}: ${final.error}`).toBe("ok");
    }
    expect(model.oversized).toEqual([]);
    expect(Math.max(...h.requests.map(requestTokens))).toBeLessThanOrEqual(4000);

    const rows = h.store.readTranscript("agent:main:test", { kinds: ["compaction"] });
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(h.store.getSession("agent:main:test")?.compactionCount).toBe(rows.length);
    const ends = compactions(h.events).filter((c) => c.phase === "end");
    expect(ends.length).toBe(rows.length);
    expect(ends.every((c) => c.phase === "end" && c.completed && c.reason === "threshold")).toBe(true);
    // the history sent after a compaction starts with its summary
    const last = h.requests.filter((r) => !isSummaryRequest(r)).at(-1);
    expect(JSON.stringify(last?.body.messages)).toContain("[Summary of the earlier conversation]");
  });

  it("a context-length error mid-run: one compaction, one retry, one assistant message, text never shown twice", async () => {
    let refusedOnce = false;
    const h = await harness({
      config: () => ({ agents: { defaults: { model: { primary: "fake/m" }, compaction: { keepRecentTokens: 100 } } } }),
      respond: (req) => {
        if (isSummaryRequest(req)) return { text: "Summary of the first turns." };
        const text = JSON.stringify(req.body.messages);
        if (text.includes("question four") && !refusedOnce) {
          refusedOnce = true;
          // text goes out first, then the API gives up on the context
          return {
            text: ["Partial ", "answer"],
            streamError: { code: "context_length_exceeded", message: "maximum context length exceeded" },
          };
        }
        return { text: text.includes("question four") ? "Full answer." : "ok ".repeat(200) };
      },
    });
    for (const q of ["question one", "question two", "question three"]) expect((await h.send(q)).status).toBe("ok");
    const final = await h.send("question four");
    expect(final.status, final.error).toBe("ok");
    expect(final.result.payloads.map((p) => p.text)).toEqual(["Full answer."]);

    const runId = final.runId;
    const runEvents = h.events.filter((e) => e.runId === runId);
    expect(compactions(runEvents).map((c) => [c.phase, c.reason])).toEqual([
      ["start", "overflow"],
      ["end", "overflow"],
    ]);
    const rows = h.store.readTranscript("agent:main:test").filter((r) => r.runId === runId && r.kind === "message");
    expect(rows.map((r) => r.message?.role)).toEqual(["user", "assistant"]);
    expect(h.store.readTranscript("agent:main:test", { kinds: ["compaction"] })).toHaveLength(1);
    // the retried answer tells clients to drop the partial text they showed
    const assistant = runEvents.flatMap((e) => (e.stream === "assistant" ? [e.data] : []));
    const firstAfter = assistant.find((a) => a.text?.startsWith("Full"));
    expect(firstAfter?.replace).toBe(true);
    expect(lifecycle(runEvents, "end")).toHaveLength(1);
  });

  it("/compact summarizes the history now and says what it did", async () => {
    const h = await harness({
      respond: (req) => (isSummaryRequest(req) ? { text: "Short summary." } : { text: "ok ".repeat(200) }),
      // keep only the newest ~100 tokens verbatim, so there is something to summarize
      config: () => ({ agents: { defaults: { model: { primary: "fake/m" }, compaction: { keepRecentTokens: 100 } } } }),
    });
    for (const q of ["one", "two", "three"]) await h.send(q);
    const hooked: Array<[string, unknown]> = [];
    h.rt.pluginHooks.on("before_compaction", (e) => void hooked.push(["before", e.messageCount]), { pluginId: "t" });
    h.rt.pluginHooks.on("after_compaction", (e) => void hooked.push(["after", e.summary]), { pluginId: "t" });
    const final = await h.send("/compact keep the numbers");
    expect(final.status).toBe("ok");
    expect(final.result.payloads[0].text).toMatch(/^Compacted the conversation: about [\d,]+ → [\d,]+ tokens\.$/);
    expect(hooked).toEqual([
      ["before", 6],
      ["after", "Short summary."],
    ]);
    const summaryCall = h.requests.find(isSummaryRequest);
    expect(JSON.stringify(summaryCall?.body)).toContain("keep the numbers");
    expect(h.store.readTranscript("agent:main:test", { kinds: ["compaction"] })).toHaveLength(1);
    // /compact itself is no message of the conversation
    expect(JSON.stringify(h.store.readTranscript("agent:main:test"))).not.toContain("/compact");
  });
});

describe("compaction model", () => {
  it("compaction.model writes the summaries", async () => {
    const h = await harness({
      respond: (req) => (isSummaryRequest(req) ? { text: "Short summary." } : { text: "ok ".repeat(200) }),
      config: (baseUrl) => ({
        agents: { defaults: { model: { primary: "fake/m" }, compaction: { keepRecentTokens: 100, model: "cheap/s" } } },
        models: {
          providers: {
            fake: { api: "openai-completions", baseUrl, apiKey: "x", models: [{ id: "m" }] },
            cheap: { api: "openai-completions", baseUrl, apiKey: "x", models: [{ id: "s" }] },
          },
        },
      }),
    });
    for (const q of ["one", "two", "three"]) await h.send(q);
    expect((await h.send("/compact")).status).toBe("ok");
    const models = h.requests.map((r) => `${isSummaryRequest(r) ? "summary" : "turn"}:${r.body.model}`);
    expect(models).toEqual(["turn:m", "turn:m", "turn:m", "summary:s"]);
  });
});

describe("model retries", () => {
  it("429 with Retry-After: 1, then success: one retry event, two requests, at least a second", async () => {
    const h = await harness({});
    h.enqueue(openAIErrorTurn(429, "Rate limit reached", "rate_limit_exceeded", { "retry-after": "1" }), {
      text: "made it",
    });
    const started = Date.now();
    const final = await h.send("hello");
    expect(final.status, final.error).toBe("ok");
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(h.requests).toHaveLength(2);
    const retries = lifecycle(h.events, "retry");
    expect(retries).toEqual([{ phase: "retry", attempt: 1, delayMs: 1000, reason: "rate_limit", model: "fake/m" }]);
  });

  it("models.providers.<id>.retry.attempts bounds the retries; baseMs/maxMs shape the waits", async () => {
    const h = await harness({
      config: (baseUrl) => ({
        models: {
          providers: {
            fake: {
              api: "openai-completions",
              baseUrl,
              apiKey: "x",
              models: [{ id: "m" }],
              retry: { attempts: 2, baseMs: 20, maxMs: 30 },
            },
          },
        },
      }),
    });
    const down = openAIErrorTurn(503, "upstream unavailable");
    h.enqueue(down, down, down, { text: "never reached" });
    const final = await h.send("hello");
    expect(final.status).toBe("error");
    expect(h.requests).toHaveLength(3); // the first try and two retries
    const delays = lifecycle(h.events, "retry").map((r) => (r.phase === "retry" ? r.delayMs : -1));
    expect(delays).toHaveLength(2);
    // equal jitter: between half and all of min(maxMs, baseMs · 2^(n−1))
    expect(delays[0]).toBeGreaterThanOrEqual(10);
    expect(delays[0]).toBeLessThanOrEqual(20);
    expect(delays[1]).toBeGreaterThanOrEqual(15);
    expect(delays[1]).toBeLessThanOrEqual(30);
  });

  it("an abort during the backoff ends the run at once, with no further request", async () => {
    const h = await harness({
      config: (baseUrl) => ({
        models: {
          providers: {
            fake: { api: "openai-completions", baseUrl, apiKey: "x", models: [{ id: "m" }], retry: { maxMs: 600000 } },
          },
        },
      }),
    });
    // a 100 s wait: the test's own timeout (20 s) fails it if the abort does not cut the wait short
    h.enqueue(openAIErrorTurn(429, "slow down", "rate_limit_exceeded", { "retry-after": "100" }), { text: "late" });
    const unsubscribe = h.rt.bus.subscribe((ev) => {
      if (ev.stream === "lifecycle" && ev.data.phase === "retry") h.service.abort(ev.sessionKey);
    });
    const final = await h.send("hello");
    unsubscribe();
    expect(final.summary).toBe("aborted");
    expect(h.requests).toHaveLength(1);
  });
});

describe("model fallback", () => {
  const deadProvider = {
    api: "openai-completions",
    baseUrl: "http://127.0.0.1:9/v1",
    apiKey: "x",
    retry: { attempts: 0 },
  };

  it("a primary that refuses connections: the fallback answers and is named in the result and agent.wait", async () => {
    const h = await harness({
      config: (baseUrl) => ({
        agents: { defaults: { model: { primary: "dead/m", fallbacks: ["fake/m"] } } },
        models: {
          providers: {
            dead: { ...deadProvider, models: [{ id: "m" }] },
            fake: { api: "openai-completions", baseUrl, apiKey: "x", models: [{ id: "m" }] },
          },
        },
      }),
    });
    h.enqueue({ text: "from the fallback" });
    const final = await h.send("hello");
    expect(final.status, final.error).toBe("ok");
    expect(final.result.meta.model).toBe("fake/m");
    expect(lifecycle(h.events, "fallback")).toEqual([
      { phase: "fallback", from: "dead/m", to: "fake/m", reason: "network" },
    ]);
    const waited = await h.service.wait(final.runId, 1000);
    expect(waited).toMatchObject({ status: "ok", model: "fake/m" });
  });

  it("a listed agent's own fallbacks are used, and when every model fails the error names each one", async () => {
    const h = await harness({
      config: () => ({
        agents: { list: [{ id: "main", model: { primary: "dead/a", fallbacks: ["dead/b"] } }] },
        models: { providers: { dead: { ...deadProvider, models: [{ id: "a" }, { id: "b" }] } } },
      }),
    });
    const final = await h.send("hello");
    expect(final.status).toBe("error");
    expect(final.error).toMatch(/^all 2 models failed:\n- dead\/a: .*network.*\n- dead\/b: .*network/);
    expect(lifecycle(h.events, "fallback")).toHaveLength(1);
  });
});
