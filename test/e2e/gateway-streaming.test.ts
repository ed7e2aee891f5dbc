/**
 * Streaming over a real gateway and real WebSockets: the `assistant` events' cumulative `text` is a checkpoint, not
 * a copy on every delta (protocol/agent-events.ts), and a client that joins mid-stream still shows the whole reply.
 */
import { describe, expect, it } from "vitest";
import { connectedPeer, deferred, type Frame, TestProvider, useTestGateways } from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

const tokens = (from: number, n: number) => Array.from({ length: n }, (_, i) => ` t${from + i}`);
const isAssistant = (runId: string) => (f: Frame) =>
  f.type === "event" && f.event === "agent" && f.payload?.runId === runId && f.payload?.stream === "assistant";
const isEnd = (runId: string) => (f: Frame) =>
  f.event === "agent" &&
  f.payload?.runId === runId &&
  f.payload?.stream === "lifecycle" &&
  (f.payload?.data as { phase?: string })?.phase === "end";
type Assistant = { text?: string; delta: string };

describe("a long reply over the gateway", () => {
  it("an operator who connects halfway through shows the whole reply, from the next checkpoint on", async () => {
    const before = tokens(0, 1500);
    const after = tokens(1500, 1500);
    const gate = deferred();
    const { url } = await gateway({ provider: new TestProvider(() => ({ before, gate: gate.promise, after })) });
    const owner = await connectedPeer(url, { scopes: ["operator.write"] });
    const id = owner.send("agent", { message: "write a lot", idempotencyKey: "long-1", sessionKey: "long" });
    await owner.response(id, 1);
    // the first half has streamed; now someone opens a dashboard on the gateway
    await owner.seen(
      // deltas are coalesced at the source (agents.defaults.streamCoalesceMs): the last token of the first half
      // ends an event that may carry the tokens before it too
      (f) =>
        isAssistant("long-1")(f) &&
        (f.payload?.data as Assistant | undefined)?.delta.endsWith(before.at(-1) ?? "?") === true,
      "the first half streamed",
    );
    const operator = await connectedPeer(url, { scopes: ["operator.read"] });
    gate.resolve();
    await owner.seen(isEnd("long-1"), "the owner's end");
    await operator.seen(isEnd("long-1"), "the operator's end");

    const reply = [...before, ...after].join("");
    const ownerData = owner.all(isAssistant("long-1")).map((f) => f.payload?.data as Assistant);
    const joinerData = operator.all(isAssistant("long-1")).map((f) => f.payload?.data as Assistant);
    expect(ownerData.map((d) => d.delta).join("")).toBe(reply);
    expect(joinerData.length).toBeGreaterThan(0);
    expect(joinerData.length).toBeLessThan(after.length + 1);

    // what the joiner shows: the first `text` it gets, then every delta after it
    const first = joinerData.findIndex((d) => d.text !== undefined);
    expect(first).toBeGreaterThanOrEqual(0);
    let shown = joinerData[first].text ?? "";
    for (const d of joinerData.slice(first + 1)) shown = d.text ?? shown + d.delta;
    expect(shown).toBe(reply);

    // the owner got the cumulative text a few dozen times at most, not on each of the 3,000 deltas
    const checkpoints = ownerData.filter((d) => d.text !== undefined).length;
    expect(checkpoints).toBeGreaterThan(1);
    expect(checkpoints).toBeLessThan(40);
    for (const p of [owner, operator]) p.close();
  });
});
