import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../config/index.js";
import type { Clock } from "../infra/clock.js";
import { AgentEventBus } from "../infra/events.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import { SessionQueue } from "./session-queue.js";
import type { AdoptedRun, RunResult, RunSpec } from "./types.js";

/*
 * Inputs another gateway node accepted and this node adopted (src/cluster/) join the local session queue as if they
 * had arrived here: queue modes apply. A real SQLite store and bus; the run port is the test's, held until released.
 */

const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const nextTickClock: Clock = {
  now: () => 1_700_000_000_000,
  setTimeout: (fn) => setImmediate(fn),
  clearTimeout: (h) => clearImmediate(h as NodeJS.Immediate),
};

function setup() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-adopt-"));
  dirs.push(dir);
  const engine = new SqliteStore(path.join(dir, "loopgate.sqlite"));
  stores.push(engine);
  const store = new SqliteStoreAdapter(engine);
  const config = parseConfig({ messages: { queue: { debounceMs: 0 } } }).messages.queue;
  const turns: Array<{ spec: RunSpec; release: () => void }> = [];
  const queue = new SessionQueue({
    store,
    bus: new AgentEventBus(),
    clock: nextTickClock,
    config: () => config,
    defaultAgentId: () => "main",
    agentProblem: () => undefined,
    newId: () => "id",
    runTurn: (spec) =>
      new Promise<RunResult>((resolve) => {
        turns.push({
          spec,
          release: () =>
            resolve({
              runId: spec.runId,
              sessionKey: spec.sessionKey,
              status: "ok",
              stopReason: "stop",
              payloads: [{ text: `ran ${spec.message}` }],
              usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 },
              startedAt: 1,
              endedAt: 2,
              durationMs: 1,
              laneWaitMs: 0,
              steps: 1,
              model: "s/m",
            }),
        });
      }),
  });
  /** An input as another node's intake stored it, adopted here. */
  const adopted = async (runId: string, queueMode?: string): Promise<AdoptedRun> => {
    const sessionKey = "agent:main:s";
    const params = {
      message: runId,
      idempotencyKey: runId,
      sessionKey,
      agentId: "main",
      ...(queueMode ? { queueMode } : {}),
    };
    await store.acceptInput(
      { key: sessionKey, agentId: "main", now: 1 },
      { runId, sessionKey, status: "queued", acceptedAt: 1, params, receipt: { kind: "started" } },
    );
    return { runId, sessionKey, acceptedAt: 1, params, lastEventSeq: 0 };
  };
  const until = async (check: () => boolean) => {
    for (let i = 0; i < 1000 && !check(); i++) await new Promise((r) => setImmediate(r));
    expect(check()).toBe(true);
  };
  return { queue, store, turns, adopted, until };
}

describe("inputs adopted from another node", () => {
  it("a message adopted while a turn runs here is steered into it, as if it had arrived on this node", async () => {
    const { queue, store, turns, adopted, until } = setup();
    expect(queue.adopt([await adopted("r1")])).toBe(1);
    await until(() => turns.length === 1);
    queue.adopt([await adopted("r2")]); // the session's mode: steer (the default)
    expect(turns[0].spec.steering?.pending()).toBe(true);
    expect((await store.getRun("r2"))?.receipt).toEqual({ kind: "steered", into: "r1" });
    turns[0].release();
    expect((await queue.final("r1")).status).toBe("ok");
  });

  it("adopted followups wait their turn here and run in the order given", async () => {
    const { queue, store, turns, adopted, until } = setup();
    queue.adopt([await adopted("r1"), await adopted("r2", "followup"), await adopted("r3", "followup")]);
    await until(() => turns.length === 1);
    expect((await store.getRun("r3"))?.receipt).toEqual({ kind: "queued", position: 2, mode: "followup" });
    for (let i = 0; i < 3; i++) {
      await until(() => turns.length === i + 1);
      turns[i].release();
    }
    expect(turns.map((t) => t.spec.runId)).toEqual(["r1", "r2", "r3"]);
    expect((await queue.final("r3")).status).toBe("ok");
  });

  it("an input already live here is not adopted again (nothing runs twice)", async () => {
    const { queue, turns, adopted, until } = setup();
    const r1 = await adopted("r1");
    expect(queue.adopt([r1])).toBe(1);
    await until(() => turns.length === 1);
    expect(queue.adopt([r1])).toBe(0);
    turns[0].release();
    await queue.final("r1");
    expect(turns.length).toBe(1);
  });

  it("a turn launched as its input is adopted starts from the session row read with the input; one that waits its turn is not handed that row", async () => {
    const { queue, store, turns, adopted, until } = setup();
    const [r1, r2] = [await adopted("r1"), await adopted("r2", "followup")];
    const row = await store.getSession(r1.sessionKey);
    if (!row) throw new Error("the intake stored the session");
    // what the adoption read (on Postgres the row comes with the queued inputs): the later turn must not reuse it
    const read = { ...row, modelOverride: "as/read" };
    queue.adopt([
      { ...r1, session: read },
      { ...r2, session: read },
    ]);
    await until(() => turns.length === 1);
    expect(turns[0].spec.session).toEqual(read);
    turns[0].release();
    await until(() => turns.length === 2);
    expect(turns[1].spec.runId).toBe("r2");
    expect(turns[1].spec.session).toBeUndefined();
    turns[1].release();
    expect((await queue.final("r2")).status).toBe("ok");
  });
});
