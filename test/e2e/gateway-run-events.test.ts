/*
 * agent.events over a real gateway, real WebSockets and a real SQLite store: stored events replayed from a seq, then
 * the live ones, exactly once. The model streams in phases the test releases (gates), so which events exist when a
 * client asks is decided by the test, not by timing.
 */
import { describe, expect, it } from "vitest";
import type { ModelRequest, ModelStreamEvent } from "../../src/providers/types.js";
import {
  connectedPeer,
  type Deferred,
  deferred,
  type Frame,
  isLifecycleEnd,
  type RawPeer,
  startTestGateway,
  TestProvider,
  tempStateDir,
  useTestGateways,
} from "../fixtures/gateway/harness.js";

const useGateway = useTestGateways();
/**
 * These tests compare replayed and live events delta by delta, one event per model chunk, so coalescing is off
 * (`streamCoalesceMs: 0`); merged deltas replay the same way, they are only fewer.
 */
const gateway = (opts: Parameters<typeof useGateway>[0] = {}) =>
  useGateway({
    config: { agents: { defaults: { model: { primary: "t/m" }, streamCoalesceMs: 0 } } },
    ...opts,
  });

/** Streams `chunks[0]`, then waits for gates[0] and streams `chunks[1]`, and so on; then ends. */
class PhasedProvider extends TestProvider {
  readonly gates: Deferred[];
  constructor(private readonly chunks: string[][]) {
    super();
    this.gates = chunks.slice(1).map(() => deferred());
  }

  override async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    this.calls++;
    for (let i = 0; i < this.chunks.length; i++) {
      if (i > 0) await this.gates[i - 1].promise;
      if (request.signal.aborted) return;
      for (const delta of this.chunks[i]) yield { type: "text_delta", delta };
    }
    yield { type: "done", stopReason: "stop", usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 } };
  }
}

const words = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i} `);
type Ev = { runId: string; seq: number; stream: string; data: Record<string, unknown> };
const liveEvents = (peer: RawPeer, runId: string, from = 0): Ev[] =>
  peer.frames
    .slice(from)
    .filter((f) => f.type === "event" && f.event === "agent" && f.payload?.runId === runId)
    .map((f) => f.payload as unknown as Ev);
const isDelta = (runId: string, text: string) => (f: Frame) =>
  f.event === "agent" &&
  f.payload?.runId === runId &&
  f.payload?.stream === "assistant" &&
  (f.payload?.data as { delta?: string })?.delta === text;

interface EventsPage {
  events: Ev[];
  lastSeq: number;
  done: boolean;
  status: string;
  nextCursor?: string;
}

describe("agent.events", () => {
  it("a client that disconnects mid-run and re-attaches with afterSeq gets every event exactly once", async () => {
    const provider = new PhasedProvider([words("a", 5), words("b", 5), words("c", 5)]);
    const { url } = await gateway({ provider });
    const watcher = await connectedPeer(url, { scopes: ["operator.read"] });
    const first = await connectedPeer(url);
    const id = first.send("agent", { message: "go", idempotencyKey: "run-1" });
    await first.seen(isDelta("run-1", "a4 "), "the first phase");
    const before = liveEvents(first, "run-1");
    first.close();
    await first.closed;

    provider.gates[0].resolve(); // the run goes on while the client is away
    await watcher.seen(isDelta("run-1", "b4 "), "the second phase");
    const again = await connectedPeer(url);
    const lastSeen = before.at(-1)!.seq;
    const reply = await again.call("agent.events", { runId: "run-1", afterSeq: lastSeen });
    expect(reply.ok).toBe(true);
    const page = reply.payload as unknown as EventsPage;
    expect(page).toMatchObject({ runId: "run-1", sessionKey: "agent:main:main", status: "running", done: false });
    expect(page.nextCursor).toBeUndefined();
    expect(page.events.map((e) => (e.data as { delta?: string }).delta)).toEqual(words("b", 5));
    const replyAt = again.frames.indexOf(reply);

    provider.gates[1].resolve();
    await again.seen(isLifecycleEnd("run-1"), "the run's end, live");
    await watcher.seen(isLifecycleEnd("run-1"), "the run's end on the watcher");
    const live = liveEvents(again, "run-1", replyAt + 1);
    expect(live[0].seq).toBe(page.lastSeq + 1);
    const union = [...before, ...page.events, ...live];
    expect(union).toEqual(liveEvents(watcher, "run-1"));
    expect(union.map((e) => e.seq)).toEqual(union.map((_, i) => i + 1));
    expect(id).toBeDefined();
    for (const p of [watcher, again]) p.close();
  });

  it("a paged replay and the live events meet exactly, also for a client that sees every run", async () => {
    const provider = new PhasedProvider([words("long-enough-to-fill-a-page-", 30), words("late", 5)]);
    const { url } = await gateway({ provider, gateway: { maxPageBytes: 1200 } });
    const sender = await connectedPeer(url, { scopes: ["operator.write"] });
    sender.send("agent", { message: "go", idempotencyKey: "run-p" });
    await sender.seen(isDelta("run-p", "long-enough-to-fill-a-page-29 "), "the first phase");
    // operator.read: this connection is offered every run's live events anyway
    const reader = await connectedPeer(url, { scopes: ["operator.read"] });
    const pages: EventsPage[] = [];
    let params: Record<string, unknown> = { runId: "run-p" };
    let firstReplyAt = -1;
    for (let i = 0; i < 50; i++) {
      const res = await reader.call("agent.events", params);
      expect(res.ok).toBe(true);
      if (firstReplyAt < 0) firstReplyAt = reader.frames.indexOf(res);
      const page = res.payload as unknown as EventsPage;
      pages.push(page);
      // the run goes on between the pages: its new events come live, never again in a later page
      if (i === 0) provider.gates[0].resolve();
      if (!page.nextCursor) break;
      params = { runId: "run-p", cursor: page.nextCursor };
    }
    expect(pages.length).toBeGreaterThan(2);
    const lastSeq = pages[0].lastSeq;
    expect(pages.every((p) => p.lastSeq === lastSeq)).toBe(true);
    await reader.seen(isLifecycleEnd("run-p"), "the end, live");
    const replayed = pages.flatMap((p) => p.events);
    expect(replayed.map((e) => e.seq)).toEqual(Array.from({ length: lastSeq }, (_, i) => i + 1));
    const live = liveEvents(reader, "run-p", firstReplyAt + 1);
    expect(live.map((e) => e.seq)).toEqual(live.map((_, i) => lastSeq + 1 + i));
    expect([...replayed, ...live]).toEqual(liveEvents(sender, "run-p"));
    for (const p of [sender, reader]) p.close();
  });

  it("a finished run replays from its stored events, done, with nothing live; also after a gateway restart", async () => {
    const stateDir = tempStateDir();
    const g = await startTestGateway({ stateDir });
    const peer = await connectedPeer(g.url);
    await peer.response(peer.send("agent", { message: "hello", idempotencyKey: "run-f" }), 2);
    const seen = liveEvents(peer, "run-f");
    const now = (await peer.call("agent.events", { runId: "run-f" })).payload as unknown as EventsPage;
    expect(now).toMatchObject({ done: true, status: "ok", lastSeq: seen.length });
    expect(now.events).toEqual(seen);
    peer.close();
    await g.gw.close();

    const restarted = await gateway({ stateDir });
    const later = await connectedPeer(restarted.url);
    const res = await later.call("agent.events", { runId: "run-f", afterSeq: 2 });
    expect(res.payload).toMatchObject({ done: true, status: "ok", lastSeq: seen.length });
    expect((res.payload as unknown as EventsPage).events).toEqual(seen.slice(2));
    later.close();
  });

  it("bad requests get an error naming the param, and the connection keeps serving", async () => {
    const { url } = await gateway();
    const peer = await connectedPeer(url);
    await peer.response(peer.send("agent", { message: "hi", idempotencyKey: "run-b" }), 2);
    const unknown = await peer.call("agent.events", { runId: "no-such-run" });
    expect(unknown.error).toMatchObject({ code: "not_found", message: expect.stringContaining("params.runId") });
    const negative = await peer.call("agent.events", { runId: "run-b", afterSeq: -1 });
    expect(negative.error).toMatchObject({ code: "invalid_params", message: expect.stringContaining("afterSeq") });
    const both = await peer.call("agent.events", { runId: "run-b", afterSeq: 1, cursor: "x" });
    expect(both.error).toMatchObject({ code: "invalid_params", message: expect.stringContaining("params.cursor") });
    const garbage = await peer.call("agent.events", { runId: "run-b", cursor: "not-a-cursor" });
    expect(garbage.error).toMatchObject({ code: "invalid_params", message: expect.stringContaining("params.cursor") });
    expect((await peer.call("agent.events", { runId: "run-b", limit: 1 })).payload).toMatchObject({
      events: [expect.objectContaining({ seq: 1 })],
      nextCursor: expect.any(String),
    });
    for (let i = 0; i < 3; i++) expect((await peer.call("health")).ok).toBe(true);
    peer.close();
  });
});
