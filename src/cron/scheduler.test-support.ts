/**
 * The cron scheduler over real parts, on a fake clock: a real AgentService and SQLite store in a temp dir, a
 * ManualClock, a scripted model `a/m` that answers at once, a model `stall/m` that never answers and ignores abort,
 * and a model `hang/m` that never answers until its request is aborted (a hung call that honours the abort).
 * Shared by the scheduler's tests and the cron soak suites (test/fixtures/soak/hardening-cron.ts).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseConfig } from "../config/load.js";
import { silentLogger } from "../infra/logger.js";
import { composeSqliteNode } from "../node/compose.js";
import { ScriptedProvider } from "../providers/scripted.js";
import type { ModelProvider, ModelRequest, ModelStreamEvent } from "../providers/types.js";
import type { RunOrigin } from "../queue/types.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import { ManualClock } from "../testing/manual-clock.js";
import { CronScheduler } from "./scheduler.js";

// 2023-11-14T22:13:20Z: an even second, 20 s past the minute
export const T0 = 1_700_000_000_000;

const dirs: string[] = [];
const cleanups: Array<() => Promise<void>> = [];
/** For an afterEach: stops every harness made since and removes its temp dir. */
export async function cleanUpHarnesses(): Promise<void> {
  for (const c of cleanups.splice(0)) await c();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}

/** A model that never sends a chunk and ignores abort: the stale child the seed warns about. */
function stallingProvider(): ModelProvider & { release(): void; waiting: number } {
  let release = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const p = {
    id: "stall",
    api: "scripted" as const,
    waiting: 0,
    release: () => release(),
    async *stream(_req: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      p.waiting++;
      await gate;
      yield { type: "error", error: new Error("released") } as unknown as ModelStreamEvent;
    },
  };
  return p;
}

export /** A model call that hangs until it is aborted, as a stuck HTTP request does; `waiting` counts calls hanging now. */
function hangingProvider(): ModelProvider & { waiting: number } {
  const p = {
    id: "hang",
    api: "scripted" as const,
    waiting: 0,
    async *stream(req: ModelRequest): AsyncGenerator<ModelStreamEvent> {
      p.waiting++;
      try {
        await new Promise<void>((_, reject) => {
          const aborted = () => reject(new Error("hang: aborted"));
          if (req.signal.aborted) aborted();
          else req.signal.addEventListener("abort", aborted, { once: true });
        });
      } finally {
        p.waiting--;
      }
      yield { type: "error", error: new Error("unreachable") } as unknown as ModelStreamEvent;
    },
  };
  return p;
}

export function harness(
  cron: Record<string, unknown>,
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-cron-")),
  /** agents.defaults keys beside the model (e.g. the models catalog) */
  agentDefaults: Record<string, unknown> = {},
) {
  if (!dirs.includes(dir)) dirs.push(dir);
  const clock = new ManualClock(T0);
  const store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
  const stall = stallingProvider();
  const hang = hangingProvider();
  const node = composeSqliteNode({
    role: "test",
    config: parseConfig({ agents: { defaults: { model: { primary: "a/m" }, ...agentDefaults } }, cron }),
    stateDir: dir,
    store: new SqliteStoreAdapter(store),
    clock,
    logger: silentLogger,
    providers: { a: new ScriptedProvider("a", () => ({ text: "done" })), stall, hang },
  });
  const { runtime: rt, service } = node;
  const accepted: Array<{ runId: string; sessionKey: string; lane?: string; origin?: RunOrigin }> = [];
  const ended = new Set<string>();
  const accept = service.accept.bind(service);
  let accepting = 0;
  service.accept = async (req, origin) => {
    accepting++;
    try {
      const a = await accept(req, origin);
      accepted.push({ runId: a.runId, sessionKey: a.sessionKey, lane: req.lane, origin });
      void service.final(a.runId).then(() => ended.add(a.runId));
      return a;
    } finally {
      accepting--;
    }
  };
  const scheduler = new CronScheduler({ service, config: rt.config.cron, clock, logger: silentLogger });
  cleanups.push(async () => {
    scheduler.stop();
    stall.release();
    await node.close();
  });
  /**
   * Lets the runs the clock started get as far as they can without time passing (they do real file and SQLite
   * work): until every run has ended, waits on the stalled or hanging model, or waits in the cron lane.
   */
  const settle = async () => {
    const quiet = () => {
      const open = accepted.filter((a) => !ended.has(a.runId)).length;
      return accepting === 0 && open === stall.waiting + hang.waiting + (rt.lanes.snapshot("cron")?.queued ?? 0);
    };
    // quiet for a few turns of the event loop in a row: a fire the clock started accepts its run after a few store
    // calls, so a moment before that looks quiet too
    let calm = 0;
    for (let i = 0; i < 100_000 && calm < 5; i++) {
      await new Promise((r) => setImmediate(r));
      calm = quiet() ? calm + 1 : 0;
    }
    if (!quiet())
      throw new Error(
        `runs did not settle: ${JSON.stringify({ accepting, accepted: accepted.length, ended: ended.size, waiting: stall.waiting + hang.waiting, lane: rt.lanes.snapshot("cron") })}`,
      );
  };
  /** moves time in 1 s steps, letting runs proceed between them */
  const advance = async (seconds: number) => {
    for (let i = 0; i < seconds; i++) {
      clock.advance(1000);
      await settle();
    }
  };
  const runs = async (jobId: string) =>
    ((await scheduler.list(100)).find((j) => j.id === jobId)?.runs ?? []).slice().reverse();
  return { dir, clock, store, rt, service, scheduler, accepted, settle, advance, runs, stall };
}
