import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../config/index.js";
import type { Clock } from "../infra/clock.js";
import { AgentEventBus } from "../infra/events.js";
import { readProcessStartTime } from "../infra/process-liveness.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import type { RunRecord, Store } from "../storage/types.js";
import { SessionQueue } from "./session-queue.js";
import type { RunResult, RunSpec } from "./types.js";

/*
 * The queue on its own: a real SQLite store and event bus, and a run port the test plays, so these cases show
 * what the queue hands to a run and what it does with the answer, with no agent runtime behind it.
 */

const dirs: string[] = [];
const stores: SqliteStore[] = [];
const children: ChildProcess[] = [];

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill();
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** Real timers would make the quiet window a sleep; with debounceMs 0 every timer is the next macrotask. */
const nextTickClock: Clock = {
  now: () => 1_700_000_000_000,
  setTimeout: (fn) => setImmediate(fn),
  clearTimeout: (h) => clearImmediate(h as NodeJS.Immediate),
};

function outcomeOf(spec: RunSpec, text: string): RunResult {
  return {
    runId: spec.runId,
    sessionKey: spec.sessionKey,
    status: "ok",
    stopReason: "stop",
    payloads: [{ text }],
    usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 },
    startedAt: 1,
    endedAt: 2,
    durationMs: 1,
    laneWaitMs: 0,
    steps: 1,
    model: "s/m",
  };
}

function queueWith(
  runTurn: (spec: RunSpec) => Promise<RunResult>,
  port: (engine: SqliteStore) => Store = (engine) => new SqliteStoreAdapter(engine),
) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-queue-"));
  dirs.push(dir);
  const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
  stores.push(store);
  const config = parseConfig({ messages: { queue: { debounceMs: 0 } } }).messages.queue;
  let ids = 0;
  const queue = new SessionQueue({
    store: port(store),
    bus: new AgentEventBus(),
    clock: nextTickClock,
    config: () => config,
    defaultAgentId: () => "main",
    agentProblem: () => undefined,
    runTurn,
    newId: () => `id-${++ids}`,
  });
  return { queue, store };
}

/**
 * A store whose intake writes answer late, as a server backend's do: each `acceptInput` is held until the test lets
 * it through (then it commits, as the engine does).
 */
class LateIntakeStore extends SqliteStoreAdapter {
  readonly intakes: string[] = [];
  private readonly held: Array<() => void> = [];
  holding = true;

  override async acceptInput(session: { key: string; agentId: string; now: number }, run: RunRecord): Promise<void> {
    this.intakes.push(run.runId);
    if (this.holding) await new Promise<void>((resolve) => this.held.push(resolve));
    return super.acceptInput(session, run);
  }

  /** lets the held writes commit, the last held first (so a write issued later would finish earlier) */
  releaseAll(): void {
    this.holding = false;
    for (const release of this.held.splice(0).reverse()) release();
  }
}

/** Lets pending promise callbacks and immediates run (no time passes). */
const turnOfTheLoop = () => new Promise((r) => setImmediate(r));

describe("with a store that answers late", () => {
  it("a session's messages are stored and run in the order they were sent, while another session is not held up", async () => {
    const ran: string[] = [];
    let late!: LateIntakeStore;
    const { queue, store } = queueWith(
      async (spec) => {
        ran.push(spec.runId);
        return outcomeOf(spec, spec.message);
      },
      (engine) => {
        late = new LateIntakeStore(engine);
        return late;
      },
    );
    const committedAtAnswer: Record<string, boolean> = {};
    const send = (runId: string, sessionKey: string) =>
      queue.accept({ message: runId, idempotencyKey: runId, sessionKey, queueMode: "followup" }).then((a) => {
        // the answer comes after the input is committed
        committedAtAnswer[runId] = store.getRun(runId) !== undefined;
        return a;
      });
    const answers = [send("a1", "chat"), send("a2", "chat"), send("b1", "other"), send("a3", "chat")];
    await turnOfTheLoop();
    // the first of each session is being written; the rest of "chat" waits behind a1 instead of overtaking it
    expect(late.intakes).toEqual(["a1", "b1"]);
    expect(ran).toEqual([]);

    late.releaseAll();
    await Promise.all(answers);
    await Promise.all(["a1", "a2", "a3", "b1"].map((id) => queue.final(id)));
    expect(late.intakes).toEqual(["a1", "b1", "a2", "a3"]);
    expect(ran.filter((id) => id.startsWith("a"))).toEqual(["a1", "a2", "a3"]);
    expect(committedAtAnswer).toEqual({ a1: true, a2: true, a3: true, b1: true });
  });

  it("the same idempotency key sent twice while the first is being stored runs once and gets one answer", async () => {
    const ran: string[] = [];
    let late!: LateIntakeStore;
    const { queue } = queueWith(
      async (spec) => {
        ran.push(spec.runId);
        return outcomeOf(spec, spec.message);
      },
      (engine) => {
        late = new LateIntakeStore(engine);
        return late;
      },
    );
    const first = queue.accept({ message: "hi", idempotencyKey: "k1", sessionKey: "chat" });
    const again = queue.accept({ message: "hi", idempotencyKey: "k1", sessionKey: "chat" });
    await turnOfTheLoop();
    late.releaseAll();
    const [a, b] = await Promise.all([first, again]);
    expect(a.existing).toBeFalsy();
    expect(b).toMatchObject({ runId: "k1", existing: true });
    await queue.final("k1");
    expect(ran).toEqual(["k1"]);
    expect(late.intakes).toEqual(["k1"]);
  });
});

describe("session queue with its own run port", () => {
  it("hands the run port the message and the sender's options, and gives the sender the port's answer", async () => {
    const specs: RunSpec[] = [];
    const { queue, store } = queueWith(async (spec) => {
      specs.push(spec);
      return outcomeOf(spec, `echo: ${spec.message}`);
    });
    await queue.accept({
      message: "hello",
      idempotencyKey: "r1",
      sessionKey: "chat",
      provider: "s",
      model: "m",
      timeout: 30,
      thinking: "low",
    });
    const final = await queue.final("r1");

    expect(specs).toHaveLength(1);
    expect(specs[0]).toMatchObject({
      runId: "r1",
      sessionKey: "agent:main:chat",
      agentId: "main",
      message: "hello",
      model: "s/m",
      timeout: 30,
      thinking: "low",
    });
    expect(final).toMatchObject({ runId: "r1", status: "ok", summary: "completed" });
    expect(final.result.payloads).toEqual([{ text: "echo: hello" }]);
    expect(store.getRun("r1")).toMatchObject({ status: "ok", stopReason: "stop" });
  });

  it("records a run whose port throws as failed with the error, and still runs the next queued message", async () => {
    const { queue, store } = queueWith(async (spec) => {
      if (spec.message === "first") throw new Error("port exploded");
      return outcomeOf(spec, "second ran");
    });
    await queue.accept({ message: "first", idempotencyKey: "r1", sessionKey: "chat" });
    await queue.accept({ message: "second", idempotencyKey: "r2", sessionKey: "chat", queueMode: "followup" });

    const first = await queue.final("r1");
    const second = await queue.final("r2");

    expect(first).toMatchObject({ status: "error", summary: "failed", error: "port exploded" });
    expect(store.getRun("r1")).toMatchObject({ status: "error", error: "port exploded" });
    expect(second.result.payloads).toEqual([{ text: "second ran" }]);
    expect(queue.busySessionCount).toBe(0);
  });
});

/** A real process's identity, as an accepting process records itself in the run params. */
async function processOwner(alive: boolean): Promise<{ pid: number; starttime: string | null }> {
  const code = alive ? "setInterval(() => {}, 1000)" : "";
  const proc = spawn(process.execPath, ["-e", code], { stdio: "ignore" });
  if (alive) children.push(proc);
  await new Promise((resolve) => proc.once(alive ? "spawn" : "exit", resolve));
  return { pid: proc.pid!, starttime: alive ? (readProcessStartTime(proc.pid!) ?? null) : "1" };
}

describe("recovery after a restart", () => {
  it("runs the queued messages of a process that died, and leaves a still-running process's messages to it", async () => {
    const ran: string[] = [];
    const { queue, store } = queueWith(async (spec) => {
      ran.push(spec.runId);
      return outcomeOf(spec, "ran");
    });
    const key = "agent:main:chat";
    store.ensureSession(key, "main", 1);
    const queued = async (runId: string, alive: boolean) => {
      const params = { message: runId, idempotencyKey: runId, sessionKey: key, agentId: "main" };
      const owner = await processOwner(alive);
      store.createRun({ runId, sessionKey: key, status: "queued", acceptedAt: 1, params: { ...params, owner } });
    };
    await queued("of-dead", false);
    await queued("of-live", true);

    expect(await queue.recover()).toEqual({ failed: [], requeued: ["of-dead"] });
    await queue.final("of-dead");
    expect(ran).toEqual(["of-dead"]);
    expect(store.getRun("of-live")?.status).toBe("queued");
  });
});
