import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../config/index.js";
import type { AgentEvent } from "../infra/events.js";
import { silentLogger } from "../infra/logger.js";
import { sqliteRuntime } from "../node/compose.js";
import { ScriptedProvider, type ScriptedTurn } from "../providers/scripted.js";
import { type ChatMessage, contentText, type ModelRequest } from "../providers/types.js";
import { COLLECT_HEADER } from "../queue/collect.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import type { RunRecord } from "../storage/types.js";
import type { Tool } from "../tools/types.js";
import { SKIPPED_FOR_STEER } from "./loop.js";
import { type AgentRequest, AgentService, QueueFullError, type Receipt } from "./service.js";

// ---------------------------------------------------------------------------------------------------------------
// helpers

const SESSION = "agent:main:chat";

/**
 * A clock the test moves by hand. The quiet window and `wait` timeouts only pass when the test says so; a zero
 * delay means "as soon as possible", so it runs on the next turn of the event loop without the clock moving.
 */
function manualClock(start = 1_700_000_000_000) {
  interface Timer {
    at: number;
    fn: () => void;
    immediate?: NodeJS.Immediate;
  }
  let current = start;
  const timers = new Set<Timer>();
  return {
    now: () => current,
    setTimeout(fn: () => void, ms: number): unknown {
      const timer: Timer = { at: current + Math.max(0, ms), fn };
      if (ms > 0) timers.add(timer);
      else timer.immediate = setImmediate(fn);
      return timer;
    },
    clearTimeout(handle: unknown): void {
      const timer = handle as Timer | undefined;
      if (!timer) return;
      if (timer.immediate) clearImmediate(timer.immediate);
      timers.delete(timer);
    },
    advance(ms: number): void {
      const target = current + ms;
      while (true) {
        let next: Timer | undefined;
        for (const t of timers) if (t.at <= target && (!next || t.at < next.at)) next = t;
        if (!next) break;
        timers.delete(next);
        current = next.at;
        next.fn();
      }
      current = target;
    },
  };
}

/**
 * Gives callbacks that are ready a chance to run, without moving the clock. Checks that something did NOT happen
 * look at synchronous state afterwards (activeRunCount, busySessionCount), never at how far I/O got.
 */
async function settle(rounds = 30): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
}

/**
 * A sequential tool that finishes only when the test releases it (or the run is aborted), so a test decides
 * exactly when a message arrives mid-run.
 */
function gateTool(name = "gate") {
  const calls: Array<{ release: (text?: string) => void }> = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const tool: Tool = {
    name,
    description: "waits until the test lets it finish",
    parameters: { type: "object", properties: {} },
    concurrency: "sequential",
    execute: (_args, ctx) =>
      new Promise((resolve) => {
        calls.push({ release: (text = `${name} finished`) => resolve({ content: text }) });
        ctx.signal.addEventListener("abort", () => resolve({ content: `${name} cancelled`, isError: true }), {
          once: true,
        });
        for (const w of waiters.filter((x) => x.count <= calls.length)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }),
  };
  return {
    tool,
    get started() {
      return calls.length;
    },
    /** resolves once `count` calls (in total) have started */
    whenStarted(count = 1): Promise<void> {
      if (calls.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    release(index: number, text?: string): void {
      calls[index].release(text);
    },
  };
}

function lastMessage(req: ModelRequest): ChatMessage | undefined {
  return req.messages[req.messages.length - 1];
}

/**
 * The model of these tests: a user message starting with "hold" makes it call the gate tool (twice for
 * "hold twice"); any other user message is echoed back; after tool results it says "tools done".
 */
function echoScript(req: ModelRequest): ScriptedTurn {
  const last = lastMessage(req);
  if (last?.role === "user") {
    const text = contentText(last.content);
    if (text.startsWith("hold twice")) return { toolCalls: [{ name: "gate" }, { name: "gate" }] };
    if (text.startsWith("hold") || text.includes("Queued #1\nhold")) {
      return { toolCalls: [{ name: "gate" }] };
    }
    return { text: `echo: ${text}` };
  }
  return { text: "tools done" };
}

const openStores: SqliteStore[] = [];
const tempDirs: string[] = [];

afterEach(() => {
  for (const s of openStores.splice(0)) s.close();
  for (const d of tempDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

interface HarnessOptions {
  queue?: Record<string, unknown>;
  script?: (req: ModelRequest, callIndex: number) => ScriptedTurn;
  /** reuse another harness's state dir (a restart over the same database) */
  dir?: string;
}

function harness(opts: HarnessOptions = {}) {
  const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-service-"));
  if (!opts.dir) tempDirs.push(dir);
  const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
  openStores.push(store);
  const clock = manualClock();
  const gate = gateTool();
  const requests: ChatMessage[][] = [];
  const script = opts.script ?? echoScript;
  const provider = new ScriptedProvider("s", (req, i) => {
    requests.push(structuredClone(req.messages));
    return script(req, i);
  });
  const rt = sqliteRuntime({
    config: parseConfig({
      agents: { defaults: { model: { primary: "s/m" } } },
      messages: { queue: opts.queue ?? {} },
    }),
    stateDir: dir,
    store: new SqliteStoreAdapter(store),
    clock,
    logger: silentLogger,
    providers: { s: provider },
    tools: [gate.tool],
  });
  const service = new AgentService(rt);
  const events: AgentEvent[] = [];
  rt.bus.subscribe((ev) => events.push(ev));
  let n = 0;

  const send = (message: string, extra: Partial<AgentRequest> = {}) =>
    service.accept({ message, idempotencyKey: extra.idempotencyKey ?? `m${++n}`, sessionKey: SESSION, ...extra });

  return {
    dir,
    store,
    clock,
    gate,
    requests,
    provider,
    rt,
    service,
    events,
    send,
    /** the user message text each model call answered, in call order */
    prompts: () =>
      requests.map((msgs) => {
        const users = msgs.filter((m) => m.role === "user");
        return contentText(users[users.length - 1]?.content ?? "");
      }),
    receipts: (runId: string): Receipt[] =>
      events.flatMap((e) => (e.runId === runId && e.stream === "queue" ? [e.data.receipt as Receipt] : [])),
    toolResults: (runId: string) =>
      events.flatMap((e) => (e.runId === runId && e.stream === "tool" && e.data.phase === "result" ? [e.data] : [])),
    /** user/assistant rows of the transcript with the run that wrote them */
    transcript: () =>
      store.readTranscript(SESSION, { kinds: ["message"] }).map((r) => ({ runId: r.runId, role: r.message?.role })),
    /**
     * Waits for `done`, moving the clock past the quiet window whenever nothing is running (never during a run,
     * so no model-idle or run timeout can fire). Fails instead of hanging when a day of quiet windows passes.
     */
    async pump<T>(done: Promise<T>): Promise<T> {
      let settled = false;
      const watched = done.finally(() => {
        settled = true;
      });
      const limit = clock.now() + 24 * 3600_000;
      while (!settled) {
        await new Promise((r) => setImmediate(r));
        if (settled || service.activeRunCount > 0) continue;
        if (clock.now() > limit) throw new Error("pump: nothing settled after a day of quiet windows");
        clock.advance(rt.config.messages.queue.debounceMs || 1);
      }
      return watched;
    },
  };
}

type Harness = ReturnType<typeof harness>;

async function finished(h: Harness, runId: string) {
  return h.pump(h.service.final(runId));
}

function terminal(run: RunRecord | undefined) {
  return { status: run?.status, stopReason: run?.stopReason };
}

// ---------------------------------------------------------------------------------------------------------------

describe("steer: a message sent while a run works", () => {
  it("is seen by the model before its next call, after the running tool finished and the turn's other tool calls were skipped", async () => {
    const h = harness();
    const a = await h.send("hold twice please");
    expect((await a).receipt).toEqual({ kind: "started" });
    await h.gate.whenStarted(1);

    const b = await h.send("actually, stop and do X", { queueMode: "steer" });
    expect((await b).receipt).toEqual({ kind: "steered", into: (await a).runId });
    expect(h.receipts((await b).runId)).toEqual([{ kind: "steered", into: (await a).runId }]);

    h.gate.release(0);
    const finalA = await h.service.final((await a).runId);
    expect(finalA.status).toBe("ok");

    // the running tool finished; the second call never ran and got the synthetic result
    expect(h.gate.started).toBe(1);
    const results = h.toolResults((await a).runId);
    expect(results).toHaveLength(2);
    expect(results[0]).toMatchObject({ result: "gate finished" });
    expect(results[0].skipped).toBeUndefined();
    expect(results[1]).toMatchObject({ skipped: "steer", isError: true, result: SKIPPED_FOR_STEER });

    // the model's next request ends with both tool results, then the new user message
    expect(h.requests).toHaveLength(2);
    const next = h.requests[1];
    expect(next.slice(-3).map((m) => m.role)).toEqual(["toolResult", "toolResult", "user"]);
    expect(next[next.length - 1]).toEqual({ role: "user", content: "actually, stop and do X" });
    expect(finalA.result.payloads.map((p) => p.text)).toEqual(["echo: actually, stop and do X"]);

    const finalB = await h.service.final((await b).runId);
    expect(finalB).toMatchObject({ runId: (await b).runId, status: "ok", mergedInto: (await a).runId });
    expect(terminal(h.store.getRun((await b).runId))).toEqual({ status: "ok", stopReason: "stop" });
    // the steered message did not run a turn of its own
    expect(new Set(h.transcript().map((r) => r.runId))).toEqual(new Set([(await a).runId]));
  });

  it("brings its image attachment into the running turn as an image part of its user message", async () => {
    const h = harness();
    const a = await h.send("hold please");
    await h.gate.whenStarted(1);
    const image = { type: "image", mimeType: "image/png", content: "iVBORw0K", width: 2, height: 1 };
    h.send("look at this instead", { queueMode: "steer", attachments: [image] });
    h.gate.release(0);
    await h.service.final((await a).runId);
    expect(h.requests[1]?.at(-1)).toEqual({
      role: "user",
      content: [
        { type: "text", text: "look at this instead" },
        { type: "image", mimeType: "image/png", data: "iVBORw0K", width: 2, height: 1 },
      ],
    });
  });

  it("that arrives while the final answer is streaming runs as its own turn after the reply", async () => {
    const h = harness({
      script: (req) => {
        const last = lastMessage(req);
        return { text: ["Here is ", `the answer to ${last?.role === "user" ? last.content : "?"}`] };
      },
    });
    let b: ReturnType<Harness["send"]> | undefined;
    const a = await h.send("question one");
    // the first chunk of the final answer is on its way to the user: the loop has no more model calls to make
    h.rt.bus.subscribe((ev) => {
      if (!b && ev.runId === a.runId && ev.stream === "assistant") b = h.send("question two", { queueMode: "steer" });
    });

    const finalA = await h.service.final((await a).runId);
    expect(b).toBeDefined();
    const runB = (await b!).runId;
    expect(finalA.result.payloads.map((p) => p.text)).toEqual(["Here is the answer to question one"]);
    // the run could no longer take it: it became a followup
    expect(h.receipts(runB).map((r) => r.kind)).toEqual(["steered", "queued"]);
    expect(h.receipts(runB)[1]).toMatchObject({ kind: "queued", mode: "followup" });
    expect(h.store.getRun(runB)?.status).toBe("queued");

    const finalB = await finished(h, runB);
    expect(finalB.mergedInto).toBeUndefined();
    expect(finalB.result.payloads.map((p) => p.text)).toEqual(["Here is the answer to question two"]);
    expect(h.prompts()).toEqual(["question one", "question two"]);
    expect(h.transcript()).toEqual([
      { runId: (await a).runId, role: "user" },
      { runId: (await a).runId, role: "assistant" },
      { runId: runB, role: "user" },
      { runId: runB, role: "assistant" },
    ]);
  });

  it("still steers when a followup is already queued; the followup runs afterwards as its own turn", async () => {
    const h = harness();
    const a = await h.send("hold twice");
    await h.gate.whenStarted(1);
    const f = await h.send("later, please", { queueMode: "followup" });
    expect((await f).receipt).toEqual({ kind: "queued", position: 1, mode: "followup" });
    const s = await h.send("right now", { queueMode: "steer" });
    expect((await s).receipt).toEqual({ kind: "steered", into: (await a).runId });

    h.gate.release(0);
    await h.service.final((await a).runId);
    expect(h.requests[1][h.requests[1].length - 1]).toEqual({ role: "user", content: "right now" });
    expect((await h.service.final((await s).runId)).mergedInto).toBe((await a).runId);

    const finalF = await finished(h, (await f).runId);
    expect(finalF.result.payloads.map((p) => p.text)).toEqual(["echo: later, please"]);
    expect(h.prompts()).toEqual(["hold twice", "right now", "later, please"]);
  });
});

describe("followup", () => {
  it("queued messages wait for the active run and the quiet window, then run one at a time, each as its own turn", async () => {
    const h = harness({ queue: { mode: "followup" } });
    const a = await h.send("hold");
    await h.gate.whenStarted(1);
    const b = await h.send("hold again");
    const c = await h.send("third");
    expect((await b).receipt).toEqual({ kind: "queued", position: 1, mode: "followup" });
    expect((await c).receipt).toEqual({ kind: "queued", position: 2, mode: "followup" });
    expect(h.receipts((await c).runId)).toEqual([{ kind: "queued", position: 2, mode: "followup" }]);

    h.gate.release(0);
    await h.service.final((await a).runId);
    expect(h.provider.callCount).toBe(2);

    // the quiet window (default 500 ms since the last message) has not passed: nothing starts
    await settle();
    h.clock.advance(499);
    await settle();
    expect(h.service.activeRunCount).toBe(0);
    expect(h.provider.callCount).toBe(2);
    expect(h.store.getRun((await b).runId)?.status).toBe("queued");

    h.clock.advance(1);
    await h.gate.whenStarted(2);
    // one at a time: however long the second runs, the third waits for it
    h.clock.advance(5000);
    await settle();
    expect(h.provider.callCount).toBe(3);
    expect(h.store.getRun((await c).runId)?.status).toBe("queued");
    expect(await h.service.wait((await c).runId, 0)).toMatchObject({ status: "pending" });

    h.gate.release(1);
    const finalB = await h.service.final((await b).runId);
    expect(finalB.result.payloads.map((p) => p.text)).toEqual(["tools done"]);
    const finalC = await finished(h, (await c).runId);
    expect(finalC.result.payloads.map((p) => p.text)).toEqual(["echo: third"]);
    expect(h.prompts()).toEqual(["hold", "hold", "hold again", "hold again", "third"]);
    const runs = h.transcript().map((r) => r.runId);
    expect(runs).toEqual([
      a.runId,
      a.runId,
      (await a).runId,
      (await a).runId,
      (await b).runId,
      (await b).runId,
      (await b).runId,
      (await b).runId,
      (await c).runId,
      (await c).runId,
    ]);
  });
});

describe("collect", () => {
  it("messages queued behind a run become one turn listing each message, and every sender gets that turn's outcome", async () => {
    const h = harness({ queue: { mode: "collect" } });
    const a = await h.send("hold");
    await h.gate.whenStarted(1);
    const queued = await Promise.all([h.send("first thing"), h.send("second thing"), h.send("third\nthing")]);
    expect(queued.map((q) => q.receipt)).toEqual([
      { kind: "queued", position: 1, mode: "collect" },
      { kind: "queued", position: 2, mode: "collect" },
      { kind: "queued", position: 3, mode: "collect" },
    ]);

    h.gate.release(0);
    await h.service.final((await a).runId);
    const finals = await h.pump(Promise.all(queued.map((q) => h.service.final(q.runId))));

    expect(h.provider.callCount).toBe(3);
    const prompt = h.prompts()[2];
    expect(prompt).toBe(
      `${COLLECT_HEADER}\n\n---\nQueued #1\nfirst thing\n\n---\nQueued #2\nsecond thing\n\n---\nQueued #3\nthird\nthing`,
    );
    expect(prompt.startsWith("[Queued messages while agent was busy]")).toBe(true);
    for (const q of queued) {
      expect(h.receipts(q.runId).at(-1)).toEqual({ kind: "collected", into: (await queued[0]).runId, count: 3 });
    }
    expect(finals.map((f) => f.status)).toEqual(["ok", "ok", "ok"]);
    expect(finals.map((f) => f.result.payloads[0]?.text)).toEqual([
      `echo: ${prompt}`,
      `echo: ${prompt}`,
      `echo: ${prompt}`,
    ]);
    expect(finals.map((f) => f.mergedInto)).toEqual([undefined, (await queued[0]).runId, (await queued[0]).runId]);
    for (const q of queued) expect(h.store.getRun(q.runId)?.status).toBe("ok");
  });

  it("a collected turn carries the images of every collected message", async () => {
    const h = harness({ queue: { mode: "collect" } });
    const a = await h.send("hold");
    await h.gate.whenStarted(1);
    const png = (content: string) => ({ type: "image", mimeType: "image/png", content });
    const queued = await Promise.all([
      h.send("first", { attachments: [png("AAAA")] }),
      h.send("second"),
      h.send("third", { attachments: [png("BBBB")] }),
    ]);
    h.gate.release(0);
    await h.service.final((await a).runId);
    await h.pump(Promise.all(queued.map((q) => h.service.final(q.runId))));
    const user = h.requests[2]?.filter((m) => m.role === "user").at(-1);
    expect(user?.content).toEqual([
      { type: "text", text: h.prompts()[2] },
      { type: "image", mimeType: "image/png", data: "AAAA" },
      { type: "image", mimeType: "image/png", data: "BBBB" },
    ]);
  });

  it("a restart during a collected turn reports all its messages interrupted instead of running some of them again", async () => {
    const h = harness({ queue: { mode: "collect" } });
    const a = await h.send("hold");
    await h.gate.whenStarted(1);
    const queued = await Promise.all([h.send("hold on, one"), h.send("two"), h.send("three")]);
    h.gate.release(0);
    await h.service.final((await a).runId);
    await h.pump(h.gate.whenStarted(2));

    // the gateway dies now, mid-turn; the next start looks at the same database
    const restarted = harness({ dir: h.dir, queue: { mode: "collect" } });
    expect(await restarted.service.recover()).toEqual({ failed: queued.map((q) => q.runId), requeued: [] });
    expect(queued.map((q) => terminal(restarted.store.getRun(q.runId)))).toEqual(
      queued.map(() => ({ status: "error", stopReason: "gateway_restart" })),
    );

    h.gate.release(1);
    await Promise.all(queued.map((q) => h.service.final(q.runId)));
  });
});

describe("interrupt", () => {
  it("clears the queue, aborts the running turn and waits for it to end, then runs the newest message", async () => {
    const h = harness();
    const a = await h.send("hold");
    await h.gate.whenStarted(1);
    const queued = await h.send("queued one", { queueMode: "followup" });
    const newest = await h.send("forget that, do this", { queueMode: "interrupt" });
    // the receipt says what the interrupt did (SPEC 21: in-band control is never silent)
    expect((await newest).receipt).toMatchObject({
      kind: "interrupted",
      stopped: [(await a).runId],
      dropped: [(await queued).runId],
      summary: "stopped 1 run, dropped 1 queued",
    });

    const dropped = h.receipts((await queued).runId).at(-1);
    expect(dropped?.kind).toBe("dropped");
    expect((dropped as { reason: string }).reason).toMatch(/interrupt/);
    expect(await h.service.final((await queued).runId)).toMatchObject({ status: "error", stopReason: "dropped" });

    const finalA = await h.service.final((await a).runId);
    expect(finalA).toMatchObject({ summary: "aborted", stopReason: "aborted" });
    expect(h.store.getRun((await a).runId)?.status).toBe("aborted");

    const finalNew = await finished(h, (await newest).runId);
    expect(finalNew.result.payloads.map((p) => p.text)).toEqual(["echo: forget that, do this"]);
    // the aborted run had ended before the newest message started
    const at = (runId: string, phase: string) =>
      h.events.findIndex((e) => e.runId === runId && e.stream === "lifecycle" && e.data.phase === phase);
    expect(at((await a).runId, "error")).toBeGreaterThan(-1);
    expect(at((await a).runId, "error")).toBeLessThan(at((await newest).runId, "start"));
    expect(h.prompts()).toEqual(["hold", "forget that, do this"]);
    expect(h.store.getRun((await queued).runId)).toMatchObject({ status: "error", stopReason: "dropped" });
  });

  it("also clears a message that was steered into the aborted run but not yet seen, so the newest message runs next", async () => {
    const h = harness();
    const a = await h.send("hold");
    await h.gate.whenStarted(1);
    const steered = await h.send("steered in", { queueMode: "steer" });
    expect((await steered).receipt.kind).toBe("steered");
    const newest = await h.send("the newest", { queueMode: "interrupt" });

    await h.service.final((await a).runId);
    const finalNew = await finished(h, (await newest).runId);
    expect(finalNew.status).toBe("ok");
    expect(h.prompts()).toEqual(["hold", "the newest"]);
    expect(h.receipts((await steered).runId).at(-1)?.kind).toBe("dropped");
    expect(terminal(h.store.getRun((await steered).runId))).toEqual({ status: "error", stopReason: "dropped" });
  });

  it("also clears a pending queue-overflow summary, so the newest message runs next", async () => {
    const h = harness({ queue: { mode: "followup", cap: 1, drop: "summarize" } });
    const a = await h.send("hold");
    await h.gate.whenStarted(1);
    h.send("will be summarized");
    h.send("pushes it out");
    const newest = await h.send("the newest", { queueMode: "interrupt" });

    await h.service.final((await a).runId);
    await finished(h, (await newest).runId);
    expect(h.prompts()).toEqual(["hold", "the newest"]);
    await settle();
    h.clock.advance(5000);
    await settle();
    expect(h.service.activeRunCount).toBe(0);
    expect(h.service.busySessionCount).toBe(0);
    expect(h.provider.callCount).toBe(2);
  });
});

describe("queue cap and drop policy", () => {
  it("summarize drops the oldest and later delivers one overflow turn with a one-line summary of each", async () => {
    const h = harness({ queue: { mode: "followup", cap: 2, drop: "summarize" } });
    const a = await h.send("hold");
    await h.gate.whenStarted(1);
    const long = `multi\nline ${"x".repeat(300)}`;
    const m1 = await h.send(long);
    const m2 = await h.send("second message");
    const m3 = await h.send("third message");
    const m4 = await h.send("fourth message");
    expect((await m3).receipt).toEqual({ kind: "queued", position: 2, mode: "followup" });
    for (const m of [m1, m2]) {
      expect(h.receipts(m.runId).at(-1)?.kind).toBe("dropped");
      expect(h.store.getRun(m.runId)).toMatchObject({ status: "error", stopReason: "dropped" });
    }

    h.gate.release(0);
    await h.service.final((await a).runId);
    await h.pump(Promise.all([h.service.final((await m3).runId), h.service.final((await m4).runId)]));

    const prompts = h.prompts().slice(2);
    expect(prompts).toHaveLength(3);
    const [header, ...lines] = prompts[0].split("\n");
    expect(header).toBe("[Queue overflow] Dropped 2 messages due to cap.");
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(162); // "- " + ≤160
    expect(lines[0]).toMatch(/^- multi line x+/);
    expect(lines[1]).toBe("- second message");
    expect(prompts.slice(1)).toEqual(["third message", "fourth message"]);

    // the overflow turn, too, ends recorded
    const overflow = h.store.listRuns({ sessionKey: SESSION }).filter((r) => r.runId.startsWith("overflow-"));
    expect(overflow.map((r) => r.status)).toEqual(["ok"]);
  });

  it("old drops the oldest queued message with a receipt and no summary turn", async () => {
    const h = harness({ queue: { mode: "followup", cap: 2, drop: "old" } });
    const a = await h.send("hold");
    await h.gate.whenStarted(1);
    const m1 = await h.send("one");
    const m2 = await h.send("two");
    const m3 = await h.send("three");
    const drop = h.receipts((await m1).runId).at(-1);
    expect(drop?.kind).toBe("dropped");
    expect((drop as { reason: string }).reason).toMatch(/cap/);
    expect(await h.service.final((await m1).runId)).toMatchObject({ status: "error", stopReason: "dropped" });

    h.gate.release(0);
    await h.service.final((await a).runId);
    await h.pump(Promise.all([h.service.final((await m2).runId), h.service.final((await m3).runId)]));
    expect(h.prompts().slice(2)).toEqual(["two", "three"]);
  });

  it("new refuses the newcomer with a clear error and stores nothing for it", async () => {
    const h = harness({ queue: { mode: "followup", cap: 2, drop: "new" } });
    const a = await h.send("hold");
    await h.gate.whenStarted(1);
    const m1 = await h.send("one");
    const m2 = await h.send("two");
    let error: unknown;
    try {
      await h.send("three", { idempotencyKey: "refused" });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(QueueFullError);
    expect((error as Error).message).toMatch(/messages\.queue\.cap/);
    expect(h.store.getRun("refused")).toBeUndefined();

    h.gate.release(0);
    await h.service.final((await a).runId);
    await h.pump(Promise.all([h.service.final((await m1).runId), h.service.final((await m2).runId)]));
    expect(h.prompts().slice(2)).toEqual(["one", "two"]);
  });
});

describe("queue mode precedence", () => {
  it("per-message mode beats the session setting, which beats the channel setting, which beats the global mode", async () => {
    const h = harness({ queue: { mode: "steer", byChannel: { telegram: "collect" } } });
    const a = await h.send("hold");
    await h.gate.whenStarted(1);

    // global: steer
    expect((await h.send("plain")).receipt).toEqual({ kind: "steered", into: (await a).runId });
    // channel beats global
    expect((await h.send("from telegram", { channel: "telegram" })).receipt).toMatchObject({
      kind: "queued",
      mode: "collect",
    });
    // session beats channel
    h.store.updateSession(SESSION, { queueMode: "followup" });
    expect((await h.send("session says followup", { channel: "telegram" })).receipt).toMatchObject({
      kind: "queued",
      mode: "followup",
    });
    // message beats session
    expect((await h.send("message says steer", { channel: "telegram", queueMode: "steer" })).receipt).toEqual({
      kind: "steered",
      into: (await a).runId,
    });

    h.gate.release(0);
    const all = h.store.listRuns({ sessionKey: SESSION }).map((r) => h.service.final(r.runId));
    await h.pump(Promise.all(all));
  });
});

describe("receipts: no accepted message vanishes", () => {
  it("after a mixed burst every message has a receipt and every run ends with a terminal status and a reason", async () => {
    const h = harness({ queue: { cap: 3, drop: "summarize" } });
    const accepted = await Promise.all([h.send("hold twice")]);
    await h.gate.whenStarted(1);
    accepted.push(
      ...(await Promise.all([
        h.send("steer one"),
        h.send("follow one", { queueMode: "followup" }),
        h.send("collect one", { queueMode: "collect" }),
        h.send("collect two", { queueMode: "collect" }),
        h.send("follow two", { queueMode: "followup" }),
        h.send("steer two", { queueMode: "steer" }),
      ])),
    );
    for (const a of accepted) {
      expect(h.receipts((await a).runId)[0]).toEqual((await a).receipt);
      expect(h.store.getRun((await a).runId)?.receipt).toBeDefined();
    }

    h.gate.release(0);
    await h.pump(Promise.all(accepted.map((a) => h.service.final(a.runId))));
    await h.pump(
      new Promise<void>((resolve) => {
        const check = () => (h.service.busySessionCount === 0 ? resolve() : setImmediate(check));
        check();
      }),
    );

    const runs = h.store.listRuns({ sessionKey: SESSION });
    expect(runs.length).toBeGreaterThanOrEqual(accepted.length);
    for (const run of runs) {
      expect(["ok", "error", "aborted"]).toContain(run.status);
      expect(run.stopReason).toBeTruthy();
      if (run.status !== "ok") expect(run.error).toBeTruthy();
    }
    expect(h.store.listRuns({ statuses: ["queued", "running"] })).toEqual([]);
  });
});

describe("abort (chat.abort)", () => {
  it("ends the queued turns first, then the active run, which ends aborted; nothing runs afterwards", async () => {
    const h = harness({ queue: { mode: "followup" } });
    const a = await h.send("hold");
    await h.gate.whenStarted(1);
    const b = await h.send("queued one");
    const c = await h.send("queued two");
    const order: string[] = [];
    h.rt.bus.subscribe((ev) => {
      if (ev.stream === "lifecycle" && ev.data.phase === "error") order.push(ev.runId);
    });

    const { aborted } = h.service.abort(SESSION);
    expect(aborted).toEqual([(await b).runId, (await c).runId, (await a).runId]);
    for (const q of [b, c]) {
      expect(await h.service.final(q.runId)).toMatchObject({ summary: "aborted" });
      expect(h.store.getRun(q.runId)?.status).toBe("aborted");
    }
    const finalA = await h.service.final((await a).runId);
    expect(finalA).toMatchObject({ summary: "aborted", stopReason: "aborted" });
    expect(order).toEqual([(await b).runId, (await c).runId, (await a).runId]);
    expect(h.store.getRun((await a).runId)?.status).toBe("aborted");

    await settle();
    h.clock.advance(5000);
    await settle();
    expect(h.service.activeRunCount).toBe(0);
    expect(h.service.busySessionCount).toBe(0);
    expect(h.provider.callCount).toBe(1);
  });

  it("also drops a pending queue-overflow summary, so no turn runs after the abort", async () => {
    const h = harness({ queue: { mode: "followup", cap: 1, drop: "summarize" } });
    const a = await h.send("hold");
    await h.gate.whenStarted(1);
    await h.send("will be summarized");
    await h.send("pushes it out");
    h.service.abort(SESSION);
    await h.service.final((await a).runId);

    await settle();
    h.clock.advance(5000);
    await settle();
    expect(h.service.activeRunCount).toBe(0);
    expect(h.service.busySessionCount).toBe(0);
    expect(h.provider.callCount).toBe(1);
  });
});

describe("durability and recovery", () => {
  it("an accepted message is on disk, as a queued run record, before accept returns", async () => {
    const h = harness({ queue: { mode: "followup" } });
    const a = await h.send("hold");
    const b = await h.send("queued");
    // a second connection sees it, so it is committed, not just in this process's memory
    const other = new SqliteStore(path.join(h.dir, "loopgate.sqlite"));
    openStores.push(other);
    const stored = other.getRun((await b).runId);
    expect(stored).toMatchObject({ runId: (await b).runId, sessionKey: SESSION, status: "queued" });
    expect(stored?.params).toMatchObject({ message: "queued" });
    expect(other.getRun((await a).runId)?.params).toMatchObject({ message: "hold" });
    h.service.abort(SESSION);
    await h.service.final((await a).runId);
  });

  it("after a restart, a run that was active is reported failed by the restart, with an event", async () => {
    const h = harness();
    // what a gateway that died mid-run leaves behind
    h.store.ensureSession(SESSION, "main", 1);
    h.store.createRun({
      runId: "was-running",
      sessionKey: SESSION,
      status: "running",
      acceptedAt: 1,
      startedAt: 2,
      params: { message: "lost", idempotencyKey: "was-running", sessionKey: SESSION, agentId: "main" },
    });

    const { failed } = await h.service.recover();
    expect(failed).toEqual(["was-running"]);
    expect(h.store.getRun("was-running")).toMatchObject({ status: "error", stopReason: "gateway_restart" });
    expect(h.events.filter((e) => e.runId === "was-running").map((e) => e.data)).toEqual([
      expect.objectContaining({ phase: "error", stopReason: "gateway_restart", kind: "gateway_restart" }),
    ]);
    expect(await h.service.wait("was-running", 10)).toMatchObject({ status: "error", stopReason: "gateway_restart" });
    expect(await h.service.final("was-running")).toMatchObject({ summary: "failed", stopReason: "gateway_restart" });
    expect(h.provider.callCount).toBe(0);
  });

  it("after a restart, messages that were still queued run, in the order they were accepted", async () => {
    const first = harness({ queue: { mode: "followup" } });
    const a = await first.send("hold");
    await first.gate.whenStarted(1);
    const b = await first.send("queued first");
    first.clock.advance(10);
    const c = await first.send("queued second");
    // shutdown: the active run is aborted, queued input stays in the store
    const drained = first.service.drain(0);
    first.clock.advance(0);
    await drained;
    expect(first.store.getRun((await a).runId)?.status).toBe("aborted");
    expect([b, c].map((q) => first.store.getRun(q.runId)?.status)).toEqual(["queued", "queued"]);

    const second = harness({ dir: first.dir, queue: { mode: "followup" } });
    expect(await second.service.recover()).toEqual({ failed: [], requeued: [(await b).runId, (await c).runId] });
    await second.pump(Promise.all([second.service.final((await b).runId), second.service.final((await c).runId)]));
    expect(second.prompts()).toEqual(["queued first", "queued second"]);
    expect([b, c].map((q) => terminal(second.store.getRun(q.runId)))).toEqual([
      { status: "ok", stopReason: "stop" },
      { status: "ok", stopReason: "stop" },
    ]);
  });
});

describe("stored run events across a restart", () => {
  it("the restart's error event follows the run's stored events: the stored seq is the source of truth", async () => {
    const h = harness();
    h.store.ensureSession(SESSION, "main", 1);
    h.store.createRun({
      runId: "was-running",
      sessionKey: SESSION,
      status: "running",
      acceptedAt: 1,
      startedAt: 2,
      params: { message: "lost", idempotencyKey: "was-running", sessionKey: SESSION, agentId: "main" },
    });
    // what the previous process had written of its events
    h.store.appendRunEvents(
      [1, 2, 3].map((seq) => ({
        runId: "was-running",
        seq,
        ts: seq,
        sessionKey: SESSION,
        stream: "assistant",
        json: "{}",
      })),
    );
    await h.service.recover();
    expect(h.events.filter((e) => e.runId === "was-running").map((e) => [e.seq, e.stream])).toEqual([[4, "lifecycle"]]);
    await h.rt.runEvents.flush();
    expect(h.store.readRunEvents("was-running").map((e) => e.seq)).toEqual([1, 2, 3, 4]);
  });

  it("a message still queued at shutdown numbers its events after the receipt stored before the restart", async () => {
    const first = harness({ queue: { mode: "followup" } });
    const a = await first.send("hold");
    await first.gate.whenStarted(1);
    const b = await first.send("queued");
    const drained = first.service.drain(0);
    first.clock.advance(0);
    await drained;
    await first.rt.runEvents.close(); // what the gateway's close does before it closes the store
    const before = first.store.readRunEvents((await b).runId).map((e) => e.seq);
    expect(before.length).toBeGreaterThan(0);
    expect(first.store.getRun((await a).runId)?.status).toBe("aborted");

    const second = harness({ dir: first.dir, queue: { mode: "followup" } });
    expect((await second.service.recover()).requeued).toEqual([(await b).runId]);
    await second.pump(second.service.final((await b).runId));
    await second.rt.runEvents.flush();
    const all = second.store.readRunEvents((await b).runId).map((e) => e.seq);
    expect(all).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
    expect(all.length).toBeGreaterThan(before.length);
    expect(second.rt.runEvents.stats.duplicates).toBe(0);
  });
});

describe("agent.wait", () => {
  it("reports pending for a queued run and timeout for a running one, and never stops either", async () => {
    const h = harness({ queue: { mode: "followup" } });
    const a = await h.send("hold");
    await h.gate.whenStarted(1);
    const b = await h.send("queued");

    const waitB = h.service.wait((await b).runId, 50);
    const waitA = h.service.wait((await a).runId, 50);
    h.clock.advance(50);
    expect(await waitB).toEqual({ runId: (await b).runId, status: "pending" });
    expect(await waitA).toEqual({ runId: (await a).runId, status: "timeout", startedAt: expect.any(Number) });

    h.gate.release(0);
    expect((await h.service.final((await a).runId)).status).toBe("ok");
    expect((await finished(h, (await b).runId)).status).toBe("ok");
    expect(await h.service.wait((await a).runId, 50)).toMatchObject({ status: "ok" });
  });
});

describe("message_received fires when a message arrives", () => {
  it("steered, queued and collected messages each fire once, on arrival, before their turn runs", async () => {
    const h = harness({ queue: { mode: "collect" } });
    const received: Array<{ content: string; runId?: string }> = [];
    const internal: string[] = [];
    h.rt.pluginHooks.on("message_received", (e, ctx) => void received.push({ content: e.content, runId: ctx.runId }), {
      pluginId: "t",
    });
    h.rt.internalHooks.register<{ content: string }>(
      "message:received",
      (e) => void internal.push(String(e.context.content)),
      {
        name: "t",
      },
    );
    const host = await h.send("hold");
    await h.gate.whenStarted(1);
    const steered = await h.send("also this", { queueMode: "steer" });
    const collected = await Promise.all([h.send("first thing"), h.send("second thing")]);
    await settle();

    // the host's turn is still in its tool; none of the others has run, yet each fired once
    expect(h.provider.callCount).toBe(1);
    expect(received).toEqual([
      { content: "hold", runId: (await host).runId },
      { content: "also this", runId: (await steered).runId },
      { content: "first thing", runId: (await collected[0]).runId },
      { content: "second thing", runId: (await collected[1]).runId },
    ]);
    expect(internal).toEqual(["hold", "also this", "first thing", "second thing"]);

    h.gate.release(0);
    await h.pump(Promise.all([host, steered, ...collected].map((m) => h.service.final(m.runId))));
    // the collected turn ran (its prompt lists both), and nothing fired again when the turns started
    expect(h.provider.callCount).toBeGreaterThanOrEqual(3);
    expect(received).toHaveLength(4);
    expect(internal).toHaveLength(4);
  });
});
