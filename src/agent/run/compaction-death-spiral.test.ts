/**
 * Regression: a summarizer whose "summary" is longer than what it summarizes must not send a run into an endless
 * compact → retry → compact loop. The run ends with context_length after at most maxAttempts compactions, with the
 * numbers and the advice in its error, and the model is called a bounded number of times.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AgentEvent } from "../../protocol/agent-events.js";
import { type CapturedRequest, openAIErrorTurn } from "../../testing/fake-model-server.js";
import { isSummaryRequest, type RunHarness, requestTokens, startRunHarness } from "./run-harness.test-support.js";

let h: RunHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("compaction death spiral", () => {
  it("a summarizer that returns more than its input ends the run with context_length after at most 3 attempts", async () => {
    let growing = false;
    h = await startRunHarness({
      window: 4000,
      config: () => ({ agents: { defaults: { model: { primary: "fake/m" }, compaction: { maxAttempts: 3 } } } }),
      respond: (req: CapturedRequest) => {
        if (isSummaryRequest(req)) return { text: "an endless summary ".repeat(2000) };
        if (requestTokens(req) > 4000)
          return openAIErrorTurn(400, "maximum context length exceeded", "context_length_exceeded");
        return { text: growing ? "fine" : "x ".repeat(700), usage: { input: requestTokens(req), output: 400 } };
      },
    });
    // grow the history until the next turn needs a compaction
    for (let i = 0; i < 6; i++) await h.send(`turn ${i} ${"words ".repeat(60)}`);
    growing = true;
    const before = h.requests.length;
    const final = await h.send("one more");
    expect(final.status).toBe("error");
    const errors = h.events.filter(
      (e): e is Extract<AgentEvent, { stream: "lifecycle" }> =>
        e.runId === final.runId && e.stream === "lifecycle" && e.data.phase === "error",
    );
    expect(errors.map((e) => (e.data.phase === "error" ? e.data.kind : ""))).toEqual(["context_length"]);
    expect(final.error).toMatch(/[\d,]+ tokens/);
    expect(final.error).toContain("/new");
    const summaries = h.requests.slice(before).filter(isSummaryRequest);
    expect(summaries.length).toBeGreaterThanOrEqual(1);
    expect(summaries.length).toBeLessThanOrEqual(3);
    expect(h.requests.length - before).toBeLessThanOrEqual(10);
  });
});
