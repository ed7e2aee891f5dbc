import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AgentRuntime } from "../agent/runtime.js";
import { AgentService } from "../agent/service.js";
import { parseConfig } from "../config/index.js";
import type { Clock } from "../infra/clock.js";
import { silentLogger } from "../infra/logger.js";
import { sqliteRuntime } from "../node/compose.js";
import type { Diagnostic, SessionDiagnostic } from "../protocol/diagnostics.js";
import {
  contentText,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamEvent,
  ProviderError,
} from "../providers/types.js";
import type { QueueSessionView } from "../queue/types.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import { ManualClock } from "../testing/manual-clock.js";
import { type DiagnosedQueue, DiagnosticsMonitor, tickIntervalMs } from "./monitor.js";

const WARN = 1000;
const ABORT = 3000;
const SESSION = "agent:main:s";

const dirs: string[] = [];
const stores: SqliteStore[] = [];
const runtimes: AgentRuntime[] = [];
const monitors: DiagnosticsMonitor[] = [];
afterEach(() => {
  for (const m of monitors.splice(0)) m.stop();
  // the runtime's event writer flushes before its store closes (what the gateway's close does)
  for (const rt of runtimes.splice(0)) rt.runEvents.close();
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** Lets promise callbacks and zero-delay timers run without moving the clock. */
async function settle(clock: ManualClock, rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    clock.advance(0);
    await new Promise((r) => setImmediate(r));
  }
}

/** Yields (without moving the clock) until `done` holds; the run path does real file I/O in between. Bounded. */
async function until(clock: ManualClock, done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 50_000 && !done(); i++) await settle(clock, 1);
  if (!done()) throw new Error(`never happened: ${what}`);
}

/** Moves the clock in monitor ticks, letting the runs react in between. */
async function advance(clock: ManualClock, ms: number): Promise<void> {
  const step = tickIntervalMs(WARN);
  for (let done = 0; done < ms; done += step) {
    clock.advance(Math.min(step, ms - done));
    await settle(clock, 5);
  }
}

/**
 * A model whose calls the test holds: a held call sends nothing and ends only when its run is aborted (a silent
 * model); the others answer "reply to <message>" at once.
 */
class HoldingModel implements ModelProvider {
  readonly id = "m";
  readonly api = "scripted" as const;
  readonly prompts: string[] = [];
  private waiters: Array<{ n: number; resolve: () => void }> = [];
  firstCallWaitsFor?: Promise<void>;
  constructor(private readonly held: (prompt: string) => boolean) {}

  /** Resolves once `n` calls have started (the run path does real file I/O first, so a test awaits this). */
  called(n: number): Promise<void> {
    if (this.prompts.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  private noteCall(prompt: string): void {
    this.prompts.push(prompt);
    for (const w of this.waiters.filter((w) => this.prompts.length >= w.n)) w.resolve();
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    const users = request.messages.filter((m) => m.role === "user");
    const prompt = contentText(users[users.length - 1]?.content ?? "");
    this.noteCall(prompt);
    // the first call waits for this, abort or not (a provider that ignores its signal, or a slow first answer)
    if (this.prompts.length === 1 && this.firstCallWaitsFor) await this.firstCallWaitsFor;
    if (this.held(prompt)) {
      await new Promise<void>((_resolve, reject) => {
        const fail = () => reject(new ProviderError("aborted", "aborted"));
        if (request.signal.aborted) fail();
        request.signal.addEventListener("abort", fail, { once: true });
      });
    }
    yield { type: "text_delta", delta: `reply to ${prompt}` };
    yield { type: "done", stopReason: "stop", usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 } };
  }
}

/** A real service over a real SQLite store on a fake clock, with a started monitor that records what it reports. */
function harness(opts: { held?: (prompt: string) => boolean; clock?: Clock; manual?: ManualClock } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-diag-"));
  dirs.push(dir);
  const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
  stores.push(store);
  const manual = opts.manual ?? new ManualClock(1_700_000_000_000);
  const model = new HoldingModel(opts.held ?? (() => false));
  const rt = sqliteRuntime({
    config: parseConfig({
      agents: { defaults: { model: { primary: "m/x" } } },
      messages: { queue: { mode: "followup", debounceMs: 0 } },
    }),
    stateDir: dir,
    store: new SqliteStoreAdapter(store),
    clock: opts.clock ?? manual,
    logger: silentLogger,
    providers: { m: model },
  });
  runtimes.push(rt);
  const service = new AgentService(rt);
  const seen: Diagnostic[] = [];
  const monitor = new DiagnosticsMonitor({
    queue: service,
    clock: opts.clock ?? manual,
    logger: silentLogger,
    warnMs: WARN,
    abortMs: ABORT,
    onDiagnostic: (d) => seen.push(d),
  });
  monitors.push(monitor);
  monitor.start(rt.bus, rt);
  let n = 0;
  const send = (message: string) => service.accept({ message, idempotencyKey: `m${++n}`, sessionKey: SESSION });
  return { clock: manual, model, rt, service, monitor, seen, send, store };
}

const types = (seen: Diagnostic[]) => seen.map((d) => (d.type === "session.recovery" ? `recovery.${d.phase}` : d.type));

describe("stuck-session monitor and recovery (fake clock)", () => {
  it("stuck-session recovery never drops queued input: the stalled run is aborted and both messages behind it run", async () => {
    const h = harness({ held: (p) => p === "first" });
    const first = h.send("first");
    const second = h.send("second");
    const third = h.send("third");
    expect([(await second).receipt, (await third).receipt]).toMatchObject([{ kind: "queued" }, { kind: "queued" }]);
    await h.model.called(1);

    await advance(h.clock, WARN);
    expect(types(h.seen)).toEqual(["session.long_running"]);
    expect(h.seen[0]).toMatchObject({ runId: (await first).runId, activity: "model", owned: true, queued: 2 });
    expect(h.monitor.stuckSessionCount).toBe(0);

    await advance(h.clock, ABORT - WARN);
    await until(h.clock, () => h.seen.length >= 5, "the recovery");
    // the unchanged long-running call is reported again at max(idle + warn, 2 × idle) = 2 s, then turns stalled
    expect(types(h.seen)).toEqual([
      "session.long_running",
      "session.long_running",
      "session.stalled",
      "recovery.requested",
      "recovery.completed",
    ]);
    expect(h.seen[2]).toMatchObject({ runId: (await first).runId, activity: "model", idleMs: ABORT });
    expect(h.seen[4]).toMatchObject({ action: "abort_run", runId: (await first).runId, outcome: "aborted", queued: 2 });

    await until(h.clock, () => h.model.prompts.length === 3 && h.service.activeRunCount === 0, "the queued runs");
    const finals = await Promise.all([first, second, third].map(async (r) => h.service.final((await r).runId)));
    expect(finals.map((f) => f.summary)).toEqual(["aborted", "completed", "completed"]);
    expect(finals.slice(1).map((f) => f.result.payloads.map((p) => p.text).join(""))).toEqual([
      "reply to second",
      "reply to third",
    ]);
    expect(h.model.prompts).toEqual(["first", "second", "third"]);
    expect(h.service.queueDepth).toBe(0);
  });

  it("a drain timer that never fires leaves queued input stuck: reported as session.stuck and started at once", async () => {
    const manual = new ManualClock(1_700_000_000_000);
    let lose = false;
    // the queue's drain timer is lost once (as if its callback never ran); every other timer works
    const lossy: Clock = {
      now: () => manual.now(),
      clearTimeout: (h) => manual.clearTimeout(h),
      setTimeout: (fn, ms) => {
        if (lose && new Error().stack?.includes("scheduleNext")) {
          lose = false;
          return -1;
        }
        return manual.setTimeout(fn, ms);
      },
    };
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const h = harness({ clock: lossy, manual, held: () => false });
    // the first answer is slow, until the test releases it
    h.model.firstCallWaitsFor = gate;
    const first = h.send("first");
    const second = h.send("second");
    await h.model.called(1);
    lose = true;
    release();
    expect((await h.service.final((await first).runId)).status).toBe("ok");
    await settle(manual);
    expect(h.service.queueDepth).toBe(1);
    expect(h.model.prompts).toEqual(["first"]);

    await advance(manual, WARN);
    expect(types(h.seen)).toEqual(["session.stuck", "recovery.requested", "recovery.completed"]);
    expect(h.seen[0]).toMatchObject({ activity: "queued", queued: 1, owned: false });
    expect(h.seen[2]).toMatchObject({ action: "release_session", outcome: "released", queued: 1 });
    expect((await h.service.final((await second).runId)).status).toBe("ok");
    expect(h.model.prompts).toEqual(["first", "second"]);
  });

  it("recovery leaves a session alone once a newer processing generation began", async () => {
    const h = harness({ held: (p) => p === "first" });
    h.send("first");
    await h.model.called(1);
    const [view] = h.service.inspectSessions();
    expect(view.active?.phase).toBe("running");
    // an older generation than the session's current one: nothing changes, the run goes on
    expect(h.service.releaseStaleSession(SESSION, view.generation - 1)).toBe("superseded");
    expect(
      await h.service.abortStalledRun({
        sessionKey: SESSION,
        runId: view.active!.runId,
        generation: view.generation - 1,
        reason: "test",
        drainMs: 10,
      }),
    ).toBe("superseded");
    expect(h.service.activeRunCount).toBe(1);
    // a live run is never released as bookkeeping, even in its own generation
    expect(h.service.releaseStaleSession(SESSION, view.generation)).toBe("nothing_to_do");
    expect(h.service.activeRunCount).toBe(1);
  });

  it("a run that ignores its abort is ended as aborted and its session released, so the next message runs", async () => {
    const h = harness();
    // the first call never ends, abort or not (a provider that ignores its signal)
    h.model.firstCallWaitsFor = new Promise(() => {});
    const first = h.send("first");
    const second = h.send("second");
    await h.model.called(1);
    await advance(h.clock, ABORT);
    await until(h.clock, () => h.seen.some((d) => d.type === "session.recovery"), "the recovery request");
    // the bounded drain after the abort: max(1 s, min(warn, 30 s))
    await advance(h.clock, Math.max(1000, WARN));
    await until(
      h.clock,
      () => h.seen.some((d) => d.type === "session.recovery" && d.phase === "completed"),
      "the recovery's end",
    );
    const completed = h.seen.find((d) => d.type === "session.recovery" && d.phase === "completed");
    expect(completed).toMatchObject({ action: "abort_run", outcome: "released_after_abort", queued: 1 });
    expect((await h.service.final((await first).runId)).summary).toBe("aborted");
    const second_ = await h.service.final((await second).runId);
    expect(second_.status, JSON.stringify(second_)).toBe("ok");
  });
});

/** A queue whose one session stays exactly as written: recovery cannot change it. */
function frozenQueue(view: QueueSessionView): DiagnosedQueue {
  return {
    inspectSessions: () => [view],
    releaseStaleSession: () => "superseded",
    abortStalledRun: async () => "superseded",
  };
}

describe("progressive backoff of an unchanged classification", () => {
  it("repeated session.stuck reports of an unchanged session come at max(idle + warn, 2 × idle)", () => {
    const clock = new ManualClock(0);
    const seen: Diagnostic[] = [];
    const lines: string[] = [];
    const monitor = new DiagnosticsMonitor({
      queue: frozenQueue({ sessionKey: SESSION, generation: 3, processingSince: 0, queued: 1 }),
      clock,
      logger: { ...silentLogger, warn: (m, fields) => lines.push(`${m} ${JSON.stringify(fields)}`) },
      warnMs: WARN,
      abortMs: ABORT,
      onDiagnostic: (d) => seen.push(d),
    });
    monitors.push(monitor);
    for (let t = 0; t <= 20_000; t += tickIntervalMs(WARN)) {
      clock.advance(t - clock.now());
      monitor.check();
    }
    const reports = seen.filter((d): d is SessionDiagnostic => d.type === "session.stuck").map((d) => d.idleMs);
    expect(reports).toEqual([1000, 2000, 4000, 8000, 16000]);
    expect(monitor.stuckSessionCount).toBe(1);
    // one log line per diagnostic, naming its class and session
    expect(lines).toHaveLength(seen.length);
    expect(lines[0]).toContain("diagnostic session.stuck");
    expect(lines[0]).toContain(SESSION);
    // every report asked for a recovery (which found the session changed by someone else each time)
    expect(seen.filter((d) => d.type === "session.recovery").length).toBe(2 * reports.length);
  });

  it("a change of class or generation is reported at once, whatever the backoff", () => {
    const clock = new ManualClock(0);
    const seen: Diagnostic[] = [];
    const view: QueueSessionView = { sessionKey: SESSION, generation: 1, processingSince: 0, queued: 1 };
    const monitor = new DiagnosticsMonitor({
      queue: frozenQueue(view),
      clock,
      logger: silentLogger,
      warnMs: WARN,
      abortMs: ABORT,
      onDiagnostic: (d) => seen.push(d),
    });
    monitors.push(monitor);
    clock.advance(WARN);
    monitor.check();
    clock.advance(WARN / 2);
    monitor.check();
    expect(seen.filter((d) => d.type === "session.stuck")).toHaveLength(1);
    view.generation = 2;
    monitor.check();
    expect(seen.filter((d) => d.type === "session.stuck").map((d) => d.generation)).toEqual([1, 2]);
  });

  it("off until started, and stopped it leaves no timer and no listener behind", () => {
    const clock = new ManualClock(0);
    const h = harness({ manual: clock });
    expect(clock.pendingTimers).toBe(1);
    expect(h.rt.modelCalls).toBeDefined();
    h.monitor.stop();
    expect(clock.pendingTimers).toBe(0);
    expect(h.rt.modelCalls).toBeUndefined();
  });
});
