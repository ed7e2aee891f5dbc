/*
 * agent.events pages over a real SQLite store and the event store writer: the byte budget, the limit, the cursor that
 * keeps the replay's end, and what "done" means. Events are emitted on a bus, so stored and not-yet-written events
 * are both in play.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RunEventWriter } from "../events/run-event-writer.js";
import { AgentEventBus } from "../infra/events.js";
import { silentLogger } from "../infra/logger.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import type { RunRecord } from "../storage/types.js";
import { ManualClock } from "../testing/manual-clock.js";
import { GatewayError } from "./errors.js";
import { readRunEventsPage, replayRange, runState } from "./run-events-page.js";

let dir: string;
let store: SqliteStore;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-events-page-"));
  store = new SqliteStore(path.join(dir, "loopgate.sqlite"));
});
afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function setup() {
  const clock = new ManualClock();
  const bus = new AgentEventBus({ now: () => clock.now() });
  const writer = new RunEventWriter({
    store: new SqliteStoreAdapter(store),
    clock,
    logger: silentLogger,
    defer: () => {},
    isTransientStoreError: () => false,
  });
  writer.attach(bus);
  const run: RunRecord = { runId: "r1", sessionKey: "agent:main:main", status: "running", acceptedAt: 1, params: {} };
  store.createRun(run);
  const delta = (text: string) => bus.emit("r1", "agent:main:main", "assistant", { delta: text });
  return { clock, bus, writer, run, delta };
}

/** Pages through a replay the way a client does; returns the seqs of each page. */
async function pageThrough(
  writer: RunEventWriter,
  run: RunRecord,
  params: { afterSeq?: number },
  opts: { limit: number; maxBytes: number },
  between: () => void = () => {},
): Promise<number[][]> {
  const pages: number[][] = [];
  let request: { afterSeq?: number; cursor?: string } = params;
  for (let i = 0; i < 100; i++) {
    const range = await replayRange(writer, run.runId, request);
    const page = await readRunEventsPage(writer, run, range, {
      ...opts,
      state: await runState(writer, run, range.until),
    });
    pages.push((await page).events.map((e) => e.seq));
    between();
    if (!(await page).nextCursor) break;
    request = { cursor: (await page).nextCursor };
  }
  return pages;
}

describe("agent.events pages", () => {
  it("a replay over the byte budget comes in pages that together hold each event up to lastSeq once", async () => {
    const { clock, writer, run, delta } = setup();
    for (let i = 0; i < 20; i++) delta("x".repeat(100));
    clock.advance(50); // the first 20 stored, the rest still buffered
    for (let i = 0; i < 10; i++) delta("y".repeat(100));
    const pages = pageThrough(writer, run, { afterSeq: 3 }, { limit: 500, maxBytes: 1000 });
    expect((await pages).length).toBeGreaterThan(3);
    expect((await pages).flat()).toEqual(Array.from({ length: 27 }, (_, i) => i + 4));
  });

  it("events emitted while a client pages are not in its later pages: they reach it live", async () => {
    const { writer, run, delta } = setup();
    for (let i = 0; i < 10; i++) delta("x".repeat(100));
    const pages = await pageThrough(writer, run, {}, { limit: 3, maxBytes: 1_000_000 }, () => delta("live"));
    expect(pages).toEqual([[1, 2, 3], [4, 5, 6], [7, 8, 9], [10]]);
    expect(await writer.lastSeq("r1")).toBe(14); // the four emitted meanwhile went out live
  });

  it("one event bigger than the whole budget is still sent, alone, so paging always moves on", async () => {
    const { writer, run, delta } = setup();
    delta("z".repeat(5000));
    delta("small");
    expect(await pageThrough(writer, run, {}, { limit: 500, maxBytes: 600 })).toEqual([[1], [2]]);
  });

  it("done once the terminal event exists, even before the run record says so", async () => {
    const { bus, writer, run, delta } = setup();
    delta("hi");
    expect(await runState(writer, run, await writer.lastSeq("r1"))).toEqual({ done: false, status: "running" });
    bus.emit("r1", "agent:main:main", "lifecycle", {
      phase: "error",
      endedAt: 2,
      status: "aborted",
      stopReason: "aborted",
    });
    expect(await runState(writer, run, await writer.lastSeq("r1"))).toEqual({ done: true, status: "aborted" });
    expect(await runState(writer, { ...run, status: "ok" }, 0)).toEqual({ done: true, status: "ok" });
  });

  it("a cursor of another run, or with afterSeq, is refused naming params.cursor", async () => {
    const { writer, run, delta } = setup();
    for (let i = 0; i < 3; i++) delta("x");
    const range = await replayRange(writer, "r1", {});
    const page = await readRunEventsPage(writer, run, range, {
      limit: 1,
      maxBytes: 10_000,
      state: { done: false, status: "running" },
    });
    const cursor = (await page).nextCursor!;
    await expect(replayRange(writer, "other-run", { cursor })).rejects.toThrow(/params\.cursor: made for another run/);
    await expect(replayRange(writer, "r1", { cursor, afterSeq: 1 })).rejects.toThrow(GatewayError);
    expect(await replayRange(writer, "r1", { cursor })).toEqual({ after: 1, until: 3, continued: true });
  });
});
