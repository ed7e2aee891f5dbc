/*
 * Issue 11, item 3: a big reply is not a slow consumer. chat.history and sessions.list come in pages (limit, an
 * opaque cursor and a byte budget per page), and a client is dropped only when its backlog stays over
 * maxBufferedBytes for gateway.slowConsumerMs, not because one large frame is still on its way to it.
 * Events stream during the paging: ticks every millisecond and a run in another session.
 */

import { describe, expect, it } from "vitest";
import { openStore } from "../../src/storage/sqlite-store.js";
import {
  connectedPeer,
  deferred,
  type Frame,
  isLifecycleEnd,
  pausablePeer,
  type RawPeer,
  TestProvider,
  tempStateDir,
  useTestGateways,
  WAIT_MS,
} from "../fixtures/gateway/harness.js";

const KiB = 1024;
const MiB = 1024 * KiB;

const gateway = useTestGateways();

async function waitUntil(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A state dir whose session `agent:main:<name>` holds `rows` user messages of `rowBytes` characters each. */
function seededStateDir(name: string, rows: number, rowBytes: number): string {
  const stateDir = tempStateDir();
  const store = openStore(stateDir);
  const key = `agent:main:${name}`;
  store.ensureSession(key, "main", 1);
  for (let i = 0; i < rows; i++) {
    const text = `${i}:`.padEnd(rowBytes, "x");
    store.appendTranscript([
      { sessionKey: key, kind: "message", createdAt: 1 + i, message: { role: "user", content: text } },
    ]);
  }
  store.close();
  return stateDir;
}

/** A run in another session that streams many small deltas while the test pages. */
function streamingProvider(): { provider: TestProvider; release: () => void } {
  const gate = deferred();
  const chunks = Array.from({ length: 400 }, (_, i) => `chunk ${i} `);
  return {
    provider: new TestProvider(() => ({ before: chunks, gate: gate.promise, after: chunks })),
    release: gate.resolve,
  };
}

type HistoryPage = { messages: Array<{ seq: number; message?: { content?: string } }>; nextCursor?: string };

async function pageThroughHistory(peer: RawPeer, sessionKey: string, limit?: number) {
  const pages: Array<{ page: HistoryPage; bytes: number }> = [];
  let cursor: string | undefined;
  do {
    const res = await peer.call("chat.history", {
      sessionKey,
      ...(limit ? { limit } : {}),
      ...(cursor ? { cursor } : {}),
    });
    expect(res.ok, JSON.stringify(res.error)).toBe(true);
    const page = res.payload as unknown as HistoryPage;
    pages.push({ page, bytes: Buffer.byteLength(JSON.stringify(res.payload)) });
    cursor = page.nextCursor;
  } while (cursor);
  return pages;
}

describe("big replies", () => {
  it("a client paging through 50 MB of history while events stream is never disconnected", async () => {
    const stateDir = seededStateDir("big", 250, 200 * KiB);
    const { provider, release } = streamingProvider();
    const { url, gw } = await gateway({ stateDir, provider, gateway: { tickIntervalMs: 1 } });
    const peer = await connectedPeer(url);
    const run = peer.send("agent", { message: "talk", idempotencyKey: "stream-1", sessionKey: "other" });
    await peer.response(run);

    // the largest page a client may ask for: the byte budget, not the row limit, ends each page
    const pages = await pageThroughHistory(peer, "big", 1000);
    release();
    await peer.seen(isLifecycleEnd("stream-1"));

    const seqs = pages.flatMap((p) => p.page.messages.map((m) => m.seq));
    expect(seqs.length).toBe(250);
    expect(new Set(seqs).size).toBe(250);
    expect(pages.reduce((n, p) => n + p.bytes, 0)).toBeGreaterThan(50 * 1000 * 1000);
    expect(pages.length).toBeGreaterThan(20);
    expect(peer.all((f) => f.event === "tick").length).toBeGreaterThan(0);
    expect(gw.connectionCount).toBe(1);
    expect((await peer.call("health")).payload).toMatchObject({ ok: true });
    peer.close();
  });

  it("a client that stops reading is still disconnected", async () => {
    const stateDir = seededStateDir("big", 40, 200 * KiB);
    const { url, gw } = await gateway({
      stateDir,
      config: { gateway: { maxBufferedBytes: MiB, slowConsumerMs: 200 } },
      gateway: { tickIntervalMs: 1 },
    });
    const { peer: slow, socket } = pausablePeer(url);
    await slow.opened;
    await slow.connect();
    const fast = await connectedPeer(url);
    socket().pause();
    // four 2 MiB pages of history nobody reads, more than the kernel buffers hold; the ticks keep coming
    for (let i = 0; i < 4; i++) slow.send("chat.history", { sessionKey: "big", limit: 40 });
    await waitUntil(() => gw.connectionCount === 1, "the slow client is dropped");
    socket().resume();
    expect((await slow.closed).code).toBe(1006);
    expect((await fast.call("health")).payload).toMatchObject({ ok: true });
    fast.close();
  });

  it("one reply larger than the buffer limit drops its reader only when gateway.slowConsumerMs is 0", async () => {
    // one 12 MB row: a page always holds at least one row, so this reply is 12 MB whatever the budget
    const stateDir = seededStateDir("huge", 1, 12 * MiB);
    const outcome = async (slowConsumerMs?: number): Promise<"kept" | "dropped"> => {
      const { url, gw } = await gateway({
        stateDir,
        config: { gateway: { maxBufferedBytes: 4 * MiB, ...(slowConsumerMs !== undefined ? { slowConsumerMs } : {}) } },
        gateway: { tickIntervalMs: 1 },
      });
      const peer = await connectedPeer(url);
      const id = peer.send("chat.history", { sessionKey: "huge" });
      const answer = await Promise.race([peer.response(id).then(() => "answered" as const), peer.closed]);
      if (answer !== "answered") return "dropped";
      // the ticks after the reply reach the client too
      const ticksAfter = peer.frames.filter((f: Frame) => f.event === "tick").length;
      await peer.seen(() => peer.frames.filter((f: Frame) => f.event === "tick").length > ticksAfter + 5);
      const kept = gw.connectionCount === 1;
      peer.close();
      await gw.close();
      return kept ? "kept" : "dropped";
    };
    expect(await outcome()).toBe("kept");
    expect(await outcome(0)).toBe("dropped");
  });
});

describe("pages", () => {
  it("a history page stops before gateway.maxPageBytes and its cursor continues where it stopped", async () => {
    const stateDir = seededStateDir("paged", 10, 100 * KiB);
    const { url } = await gateway({ stateDir, config: { gateway: { maxPageBytes: 300 * KiB } } });
    const peer = await connectedPeer(url);
    const pages = await pageThroughHistory(peer, "paged");
    expect(pages.map((p) => p.page.messages.length)).toEqual([2, 2, 2, 2, 2]);
    for (const p of pages) expect(p.bytes).toBeLessThanOrEqual(300 * KiB);
    // newest page first, each page oldest first
    const seqs = pages.flatMap((p) => p.page.messages.map((m) => m.seq));
    expect(seqs).toEqual([9, 10, 7, 8, 5, 6, 3, 4, 1, 2]);
    // a row limit ends pages too
    expect((await pageThroughHistory(peer, "paged", 3)).map((p) => p.page.messages.length)).toEqual([2, 2, 2, 2, 2]);
    expect((await pageThroughHistory(peer, "paged", 1)).map((p) => p.page.messages.length)).toEqual(Array(10).fill(1));
    peer.close();
  });

  it("a history cursor keeps to its generation when the session is reset while a client pages", async () => {
    const stateDir = seededStateDir("gen", 4, 10);
    const { url } = await gateway({ stateDir });
    const peer = await connectedPeer(url);
    const first = (await peer.call("chat.history", { sessionKey: "gen", limit: 2 })).payload as Record<string, unknown>;
    expect(first).toMatchObject({ messages: [{ seq: 3 }, { seq: 4 }], nextCursor: expect.any(String) });
    expect((await peer.call("sessions.reset", { sessionKey: "gen" })).ok).toBe(true);
    const rest = await peer.call("chat.history", { sessionKey: "gen", limit: 2, cursor: first.nextCursor });
    expect(rest.payload).toMatchObject({ generation: first.generation, messages: [{ seq: 1 }, { seq: 2 }] });
    const now = await peer.call("chat.history", { sessionKey: "gen" });
    expect(now.payload?.generation).toBe((first.generation as number) + 1);
    expect(rest.payload?.nextCursor).toBeUndefined();
    peer.close();
  });

  it("a cursor from elsewhere is refused with a message naming params.cursor", async () => {
    const { url } = await gateway({ stateDir: seededStateDir("c", 3, 10) });
    const peer = await connectedPeer(url);
    const garbage = await peer.call("chat.history", { sessionKey: "c", cursor: "not-a-cursor" });
    expect(garbage.error).toMatchObject({ code: "invalid_params", message: expect.stringContaining("params.cursor:") });
    const history = (await peer.call("chat.history", { sessionKey: "c", limit: 1 })).payload as Record<string, unknown>;
    const foreign = await peer.call("sessions.list", { cursor: history.nextCursor });
    expect(foreign.error?.message).toMatch(/^params\.cursor: not a sessions\.list cursor/);
    const both = await peer.call("chat.history", { sessionKey: "c", cursor: "x", before: 2 });
    expect(both.error?.message).toBe("params.cursor: pass cursor or before, not both");
    // the connection keeps serving
    expect((await peer.call("chat.history", { sessionKey: "c" })).ok).toBe(true);
    peer.close();
  });

  it("sessions.list pages with limit and cursor and lists every session once", async () => {
    const stateDir = tempStateDir();
    const store = openStore(stateDir);
    for (let i = 0; i < 7; i++) store.ensureSession(`agent:main:s${i}`, "main", 100 + (i % 3));
    store.close();
    const { url } = await gateway({ stateDir, config: { gateway: { maxPageBytes: 850 } } });
    const peer = await connectedPeer(url);
    const keys: string[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    do {
      const res = await peer.call("sessions.list", { limit: 3, ...(cursor ? { cursor } : {}) });
      expect(res.ok, JSON.stringify(res.error)).toBe(true);
      const page = res.payload as { sessions: Array<{ key: string }>; count: number; nextCursor?: string };
      expect(page.count).toBe(page.sessions.length);
      keys.push(...page.sessions.map((s) => s.key));
      sizes.push(page.sessions.length);
      cursor = page.nextCursor;
    } while (cursor);
    expect(keys).toEqual([
      "agent:main:s2",
      "agent:main:s5",
      "agent:main:s1",
      "agent:main:s4",
      "agent:main:s0",
      "agent:main:s3",
      "agent:main:s6",
    ]);
    // the 850-byte budget holds 2 of the 3 sessions the limit allows
    expect(sizes).toEqual([2, 2, 2, 1]);
    peer.close();
  });
});
