/**
 * A turn's answer and its end go to the store in one commit (docs/scale-out.md, "A turn's own commits"): a crash can
 * no longer leave an answer in the history whose run is still `running`, and whoever is told the run ended finds the
 * answer in the history. Through the real queue, run loop and SQLite store, with the fake model server.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Tool } from "../../tools/types.js";
import { type RunHarness, startRunHarness } from "./run-harness.test-support.js";

const noop: Tool = {
  name: "noop",
  description: "Does nothing.",
  parameters: { type: "object", properties: {} },
  concurrency: "parallel",
  execute: async () => ({ content: "ok" }),
};

let h: RunHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  vi.restoreAllMocks();
});

function texts(h: RunHarness): unknown[] {
  return h.store.readTranscript("agent:main:test").map((r) => {
    const m = r.message;
    if (!m) return r.kind;
    if (typeof m.content === "string") return m.content;
    return m.content.map((c) => (c.type === "text" ? c.text : c.type)).join("");
  });
}

describe("a turn's answer and its end", () => {
  it("are one write: the answer carries the run's end and usage, and no end is written apart from it", async () => {
    h = await startRunHarness({ tools: [noop] });
    const together = vi.spyOn(h.store, "appendTranscriptAndEnd");
    const updates = vi.spyOn(h.store, "updateRuns");
    h.enqueue({ toolCalls: [{ name: "noop", arguments: {} }] }, { text: "Done." });

    const final = await h.send("go");

    expect(final.status).toBe("ok");
    expect(together).toHaveBeenCalledTimes(1);
    const [rows, end] = together.mock.calls[0];
    expect(rows.map((r) => r.message?.role)).toEqual(["assistant"]);
    expect(end.patches.map((p) => [p.runId, p.patch.status])).toEqual([[final.runId, "ok"]]);
    expect(end.usage?.total).toBeGreaterThan(0);
    // the only other run write is the turn's `running`
    expect(updates.mock.calls.flatMap(([patches]) => patches.map((p) => p.patch.status))).toEqual(["running"]);
    expect(texts(h)).toEqual(["go", "toolCall", "ok", "Done."]);
    expect(h.store.getRun(final.runId)).toMatchObject({ status: "ok" });
    expect(h.store.getSession("agent:main:test")?.totalTokens).toBe(end.usage?.total);
  });

  it("are both stored when the run's end event goes out", async () => {
    h = await startRunHarness({});
    const seen: Array<{ status?: string; last: unknown }> = [];
    const store = h.store;
    h.rt.bus.subscribe((ev) => {
      if (ev.stream !== "lifecycle" || ev.data.phase !== "end") return;
      seen.push({ status: store.getRun(ev.runId)?.status, last: texts(h as RunHarness).at(-1) });
    });
    h.enqueue({ text: "Hello there." });

    await h.send("hi");

    expect(seen).toEqual([{ status: "ok", last: "Hello there." }]);
  });

  it("when they cannot be written together, the answer is still stored, then the end as before", async () => {
    h = await startRunHarness({});
    vi.spyOn(h.store, "appendTranscriptAndEnd").mockImplementationOnce(() => {
      throw new Error("database or disk is full");
    });
    h.enqueue({ text: "Still here." });

    const final = await h.send("hi");

    expect(final.status).toBe("ok");
    expect(texts(h)).toEqual(["hi", "Still here."]);
    expect(h.store.getRun(final.runId)).toMatchObject({ status: "ok" });
  });

  it("an answer that cannot be stored even alone fails the run with the store's error, as before it was held", async () => {
    h = await startRunHarness({});
    const store = h.store;
    const full = () => {
      throw new Error("database or disk is full");
    };
    vi.spyOn(store, "appendTranscriptAndEnd").mockImplementationOnce(full);
    const alone = store.appendTranscript.bind(store);
    vi.spyOn(store, "appendTranscript").mockImplementation((rows) =>
      rows.some((r) => r.message?.role === "assistant") ? full() : alone(rows),
    );
    h.enqueue({ text: "Lost." });

    const final = await h.send("hi");

    expect(final.status).toBe("error");
    expect(String(final.error)).toContain("disk is full");
    expect(h.store.getRun(final.runId)).toMatchObject({ status: "error" });
  });

  it("a failed turn has no answer to carry: its error row and its end are written as before", async () => {
    h = await startRunHarness({});
    const together = vi.spyOn(h.store, "appendTranscriptAndEnd");
    h.enqueue({ error: { status: 400, body: { error: { message: "bad request" } } } });

    const final = await h.send("hi");

    expect(final.status).toBe("error");
    expect(together).not.toHaveBeenCalled();
    expect(h.store.getRun(final.runId)).toMatchObject({ status: "error" });
  });
});
