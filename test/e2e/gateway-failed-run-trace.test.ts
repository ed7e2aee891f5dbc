/*
 * A run that ends in error, timeout or abort leaves its trace in the transcript (issue 31 item 1): chat.history shows
 * it after the fact, on another gateway over the same state dir too (a reload reads the store), as an assistant
 * message in OpenClaw's shape (stopReason "error"/"aborted", errorMessage). The model's next turn does not get the
 * empty marker as a message of the conversation; a partial answer it streamed stays in the context as before.
 */
import { describe, expect, it } from "vitest";
import type { HistoryEntry } from "../../src/protocol/payloads.js";
import {
  connectedPeer,
  deferred,
  type RawPeer,
  TestProvider,
  type TestTurn,
  tempStateDir,
  useTestGateways,
} from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

async function history(peer: RawPeer, sessionKey: string): Promise<HistoryEntry[]> {
  const res = await peer.call("chat.history", { sessionKey, limit: 50 });
  expect(res.ok, JSON.stringify(res.error)).toBe(true);
  return (res.payload as { messages: HistoryEntry[] }).messages;
}

async function runToEnd(peer: RawPeer, sessionKey: string, message: string, params: object = {}): Promise<void> {
  const id = peer.send("agent", { message, sessionKey, idempotencyKey: `${sessionKey}-${message}`, ...params });
  await peer.response(id, 2);
}

describe("a run that did not end well, in the transcript", () => {
  it("keeps a model error after the run: the row names the error, and a new gateway on the same store shows it", async () => {
    const stateDir = tempStateDir();
    const provider = new TestProvider((_req, i) =>
      i === 0 ? { error: { kind: "bad_request", message: "400 the model refused the request shape" } } : {},
    );
    const first = await gateway({ stateDir, provider });
    const peer = await connectedPeer(first.url);
    await runToEnd(peer, "failing", "hello");
    const rows = await history(peer, "failing");
    expect(rows.map((r) => r.role)).toEqual(["user", "assistant"]);
    expect(rows[1]).toMatchObject({
      kind: "message",
      role: "assistant",
      content: [],
      stopReason: "error",
      errorMessage: expect.stringContaining("400 the model refused the request shape"),
      // the run's error kind, as its chat error event names it
      errorKind: "refusal",
      runId: "failing-hello",
      timestamp: expect.any(Number),
    });
    peer.close();
    await first.gw.close();

    // "after a reload": another process reads the same store
    const second = await gateway({ stateDir, provider });
    const again = await connectedPeer(second.url);
    const reread = await history(again, "failing");
    expect(reread[1]).toMatchObject({ stopReason: "error", errorKind: "refusal" });
    again.close();
  });

  it("keeps the partial answer of a failed call with the error on the same row, and sends it (only it) to the model next turn", async () => {
    /** each call's context as it was sent (the loop appends to the array afterwards) */
    const seen: string[][] = [];
    const turns: TestTurn[] = [
      { before: ["Half an ", "answer"], error: { kind: "bad_request", message: "stream broke" } },
      { error: { kind: "bad_request", message: "refused outright" } },
      { before: ["fine now"] },
    ];
    const provider = new TestProvider((req, i) => {
      seen.push(req.messages.map((m) => `${m.role}:${JSON.stringify(m.content)}`));
      return turns[i] ?? {};
    });
    const { url } = await gateway({ provider });
    const peer = await connectedPeer(url);
    await runToEnd(peer, "partial", "one");
    await runToEnd(peer, "partial", "two");
    await runToEnd(peer, "partial", "three");
    const rows = await history(peer, "partial");
    expect(rows.map((r) => [r.role, r.stopReason ?? "", r.errorMessage ?? ""])).toEqual([
      ["user", "", ""],
      ["assistant", "error", expect.stringContaining("stream broke")],
      ["user", "", ""],
      ["assistant", "error", expect.stringContaining("refused outright")],
      ["user", "", ""],
      ["assistant", "stop", ""],
    ]);
    expect(rows[1].content).toEqual([{ type: "text", text: "Half an answer" }]);
    // the third call's context: the partial text is there, the empty marker of the second run is not
    expect(seen[2]).toEqual([
      'user:"one"',
      'assistant:[{"type":"text","text":"Half an answer"}]',
      'user:"two"',
      'user:"three"',
    ]);
    peer.close();
  });

  it("records an abort (chat.abort) and a timeout, each as itself", async () => {
    const gate = deferred();
    const provider = new TestProvider(() => ({ before: ["thinking it over"], gate: gate.promise }));
    const { url } = await gateway({ provider });
    const peer = await connectedPeer(url);
    const id = peer.send("agent", { message: "stop me", sessionKey: "stopped", idempotencyKey: "abort-me" });
    await peer.seen((f) => f.event === "agent" && f.payload?.runId === "abort-me" && f.payload?.stream === "assistant");
    await peer.call("chat.abort", { sessionKey: "stopped" });
    await peer.response(id, 2);
    const aborted = await history(peer, "stopped");
    expect(aborted[1]).toMatchObject({
      role: "assistant",
      content: [{ type: "text", text: "thinking it over" }],
      stopReason: "aborted",
      errorKind: "aborted",
    });

    // a one-second run timeout; the model never finishes
    await runToEnd(peer, "slow", "take your time", { timeout: 1 });
    const timedOut = await history(peer, "slow");
    expect(timedOut[1]).toMatchObject({
      role: "assistant",
      stopReason: "aborted",
      errorKind: "timeout",
      errorMessage: "run timed out after 1 s",
    });
    gate.resolve();
    peer.close();
  });
});
