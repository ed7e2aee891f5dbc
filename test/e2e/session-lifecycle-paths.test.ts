/*
 * The three ways a session gets a new transcript generation — /new typed in the session, the sessions.reset method
 * over a real WebSocket, and a cron job's isolated run — must look the same from outside: the session write lock is
 * taken, the hooks fire, followers hear of it, and a new generation begins. One runtime serves all three (real
 * SQLite store, the real file lock, wrapped only to write down when it is taken and given back). A second, real
 * process holds the lock in the cron case (test/fixtures/write-lock/holder.mjs over dist/: `npm run build` first).
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { CronScheduler } from "../../src/cron/scheduler.js";
import { type GatewayHandle, startGateway } from "../../src/gateway/server.js";
import { silentLogger } from "../../src/infra/logger.js";
import { composeSqliteNode } from "../../src/node/compose.js";
import { FileSessionLock, sessionLockFile } from "../../src/session/file-lock.js";
import type { SessionLockPort } from "../../src/session/lock-port.js";
import { SqliteStoreAdapter } from "../../src/storage/sqlite-adapter.js";
import { SqliteStore } from "../../src/storage/sqlite-store.js";
import { ManualClock } from "../../src/testing/manual-clock.js";
import { connectedPeer, removeTempDirs, TestProvider, tempStateDir, WAIT_MS } from "../fixtures/gateway/harness.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const holderScript = path.join(repo, "test", "fixtures", "write-lock", "holder.mjs");
const distWriteLock = path.join(repo, "dist", "session", "write-lock.js");

beforeAll(() => {
  if (!fs.existsSync(distWriteLock)) throw new Error(`${distWriteLock} not found: run \`npm run build\` first`);
});

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  removeTempDirs();
});

/**
 * One runtime and service with everything a session change can touch written into `seq` as it happens: the lock
 * taken and given back, internal command hooks, session_start / session_end, sessions.changed notices.
 */
function world(opts: { acquireTimeoutMs?: number } = {}) {
  const dir = tempStateDir();
  const seq: string[] = [];
  const fileLocks = new FileSessionLock({ stateDir: dir, acquireTimeoutMs: opts.acquireTimeoutMs });
  const locks: SessionLockPort = {
    kind: "file",
    async acquire(key, o) {
      seq.push(`asks for the lock of ${key}`);
      const handle = await fileLocks.acquire(key, o);
      seq.push(`lock ${key}`);
      return {
        sessionKey: handle.sessionKey,
        fencingToken: handle.fencingToken,
        release: async () => {
          seq.push(`unlock ${key}`);
          await handle.release();
        },
      };
    },
  };
  const sqlite = new SqliteStore(path.join(dir, "loopgate.sqlite"));
  const clock = new ManualClock(1_700_000_000_000);
  // a gateway node over the test's store, with the lock port wrapped so the test can see it taken and given back
  const node = composeSqliteNode({
    role: "gateway",
    config: parseConfig({
      agents: { defaults: { model: { primary: "t/m" } } },
      messages: { queue: { mode: "followup", debounceMs: 0 } },
    }),
    stateDir: dir,
    store: new SqliteStoreAdapter(sqlite),
    sessionLocks: locks,
    providers: { t: new TestProvider() },
    logger: silentLogger,
  });
  const rt = node.runtime;
  rt.pluginHooks.on(
    "session_end",
    (e) => void seq.push(`session_end ${e.sessionKey} gen ${e.generation} ${e.reason}`),
    {
      pluginId: "seq",
    },
  );
  rt.pluginHooks.on("session_start", (e) => void seq.push(`session_start ${e.sessionKey} gen ${e.generation}`), {
    pluginId: "seq",
  });
  rt.internalHooks.register(
    "command",
    (e) => void seq.push(`command:${e.action} ${(e.context as { sessionKey?: string }).sessionKey}`),
    { name: "seq" },
  );
  rt.sessionEvents.subscribe((e) => {
    if (e.type === "changed") seq.push(`changed ${e.sessionKey} ${e.reason}`);
  });
  const service = node.service;
  // The test's own scheduler, on fake time: its job fires when the test moves the clock, never on its own. The job
  // is not in the runtime's config, so the scheduler a gateway on this service starts has nothing to fire.
  const cronConfig = parseConfig({ cron: { jobs: [{ id: "iso", schedule: "*/2 * * * * *", message: "ping" }] } }).cron;
  const cron = new CronScheduler({ service, config: cronConfig, clock, logger: silentLogger });
  cleanups.push(async () => {
    cron.stop();
    // the node closes the store
    await node.close();
  });
  const turn = async (sessionKey: string, message: string) => {
    const a = await service.accept({ message, sessionKey, idempotencyKey: `${sessionKey}:${message}:${seq.length}` });
    const final = await service.final(a.runId);
    expect(final.status, JSON.stringify(final)).toBe("ok");
  };
  /** fires the cron job once and waits until its run is recorded as ended */
  const fireCron = async () => {
    const before = (await cron.list(10))[0]?.runs?.length ?? 0;
    clock.advance(2000);
    return until(
      async () => (await cron.list(10))[0]?.runs ?? [],
      (runs) => runs.length > before && runs.every((r) => r.endedAt !== undefined),
      "the cron run to end",
    );
  };
  return { dir, seq, rt, node, service, cron, sqlite, turn, fireCron };
}

async function until<T>(read: () => T | Promise<T>, done: (v: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; have ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** What happened from `from` on, with the session key written as K, up to the new generation's session_start. */
function sequenceOf(seq: string[], from: number, key: string): string[] {
  const lines = seq.slice(from).map((l) => l.replaceAll(key, "K"));
  const start = lines.findIndex((l) => l.startsWith("session_start K"));
  return start === -1 ? lines : lines.slice(0, start + 1);
}

describe("one session lifecycle for /new, sessions.reset and cron", () => {
  it("each of the three ways to start a new generation takes the lock, fires the hooks, tells followers, the same way", async () => {
    const w = world();
    await w.cron.start();
    const gw: GatewayHandle = await startGateway({
      node: w.node,
      port: 0,
      host: "127.0.0.1",
      logger: silentLogger,
      tickIntervalMs: 60_000,
    });
    cleanups.push(() => gw.close());
    const peer = await connectedPeer(gw.url);
    cleanups.push(() => peer.close());

    const paths: Array<{ path: string; key: string; prepare: () => Promise<void>; act: () => Promise<void> }> = [
      {
        path: "in-band /new",
        key: "agent:main:typed",
        prepare: () => w.turn("agent:main:typed", "hello"),
        act: () => w.turn("agent:main:typed", "/new"),
      },
      {
        path: "sessions.reset (new)",
        key: "agent:main:rpc",
        prepare: () => w.turn("agent:main:rpc", "hello"),
        act: async () => {
          const res = await peer.call("sessions.reset", { key: "rpc", reason: "new" });
          expect(res.ok, JSON.stringify(res.error)).toBe(true);
        },
      },
      {
        path: "cron isolated run",
        key: "cron:iso",
        // its first run makes the session; the second starts a new generation for itself
        prepare: async () => void (await w.fireCron()),
        act: async () => void (await w.fireCron()),
      },
    ];

    const expected = [
      "asks for the lock of K",
      "lock K",
      "unlock K",
      "changed K reset",
      "session_end K gen 1 new",
      "session_start K gen 2",
    ];
    const seen: Record<string, string[]> = {};
    for (const p of paths) {
      await p.prepare();
      expect(w.sqlite.getSession(p.key)?.generation, `${p.path}: before`).toBe(1);
      const from = w.seq.length;
      await p.act();
      seen[p.path] = sequenceOf(w.seq, from, p.key);
      console.log(
        `${p.path.padEnd(22)} ${seen[p.path].join(" → ")}; generation now ${w.sqlite.getSession(p.key)?.generation}`,
      );
    }
    for (const p of paths) {
      // a command hook is for a command someone gave; cron's isolated run is none
      const commands = seen[p.path].filter((l) => l.startsWith("command:"));
      expect(commands, p.path).toEqual(p.path.startsWith("cron") ? [] : ["command:new K"]);
      expect(
        seen[p.path].filter((l) => !l.startsWith("command:")),
        p.path,
      ).toEqual(expected);
      // the new generation is the one the next turn writes to
      expect(w.sqlite.getSession(p.key)?.generation, p.path).toBe(2);
    }
  });

  it("a cron isolated run waits for a session another process holds, and resets only after it lets go", async () => {
    const w = world();
    await w.cron.start();
    await w.fireCron();
    expect(w.sqlite.getSession("cron:iso")?.generation).toBe(1);

    const holder = await holdLock(sessionLockFile(w.dir, "cron:iso"));
    const from = w.seq.length;
    const stored = () => w.sqlite.getSession("cron:iso")?.generation;
    // the next fire: it either asks for the lock (and must wait) or, without the lock, resets at once
    const fired = w.fireCron();
    await until(
      () => ({ asked: w.seq.slice(from).includes("asks for the lock of cron:iso"), generation: stored() }),
      (s) => s.asked || s.generation !== 1,
      "the cron reset to ask for the lock, or to reset without it",
    );
    console.log(`while another process holds the lock: ${w.seq.slice(from).join(" → ")}; generation ${stored()}`);
    expect(stored()).toBe(1);
    expect(w.seq.slice(from)).toEqual(["asks for the lock of cron:iso"]);

    await holder.release();
    await fired;
    const after = sequenceOf(w.seq, from, "cron:iso");
    console.log(`after it let go: ${after.join(" → ")}; generation ${stored()}`);
    expect(after).toEqual([
      "asks for the lock of K",
      "lock K",
      "unlock K",
      "changed K reset",
      "session_end K gen 1 new",
      "session_start K gen 2",
    ]);
    expect(stored()).toBe(2);
  });

  it("a cron isolated run whose session stays busy past the lock timeout does not start, and writes nothing", async () => {
    const w = world({ acquireTimeoutMs: 300 });
    await w.cron.start();
    await w.fireCron();
    const holder = await holdLock(sessionLockFile(w.dir, "cron:iso"));
    cleanups.push(() => holder.release());
    const from = w.seq.length;
    const runs = await w.fireCron();
    // newest first
    console.log(`cron run while busy: ${JSON.stringify(runs[0])}; seq ${w.seq.slice(from).join(" → ")}`);
    expect(runs[0]).toMatchObject({ status: "error", errorKind: "not_started" });
    expect(w.sqlite.getSession("cron:iso")?.generation).toBe(1);
    expect(w.seq.slice(from).filter((l) => l.startsWith("session_") || l.startsWith("changed"))).toEqual([]);
  });

  it("with emitLifecycleHooks off, a reset and a delete fire no session_start or session_end, whoever asks", async () => {
    const w = world();
    await w.turn("agent:main:quiet", "hello");
    const from = w.seq.length;
    const lifecycle = w.rt.sessionLifecycle;
    // the requests each caller makes, with the hooks turned off
    await lifecycle.reset("agent:main:quiet", {
      reason: "new",
      marker: "/new",
      command: { args: "", source: "in-band" },
      emitLifecycleHooks: false,
    });
    await lifecycle.reset("agent:main:quiet", {
      reason: "reset",
      marker: "sessions.reset (reset)",
      command: { args: "", source: "gateway:sessions.reset" },
      emitLifecycleHooks: false,
    });
    await lifecycle.reset("agent:main:quiet", {
      reason: "new",
      marker: "cron: isolated run",
      emitLifecycleHooks: false,
    });
    expect(await lifecycle.delete("agent:main:quiet", { emitLifecycleHooks: false })).toBe(true);
    const got = w.seq.slice(from).map((l) => l.replaceAll("agent:main:quiet", "K"));
    console.log(`hooks off: ${got.join(" → ")}`);
    expect(got.filter((l) => l.startsWith("session_"))).toEqual([]);
    // the rest still happens: the lock each time, the command hooks of commands, the notices
    expect(got.filter((l) => l === "lock K")).toHaveLength(4);
    expect(got.filter((l) => l.startsWith("command:"))).toEqual(["command:new K", "command:reset K"]);
    expect(got.filter((l) => l.startsWith("changed"))).toEqual([
      "changed K reset",
      "changed K reset",
      "changed K reset",
      "changed K deleted",
    ]);
  });

  it("resetting a session deleted meanwhile is a not_found naming it, fires nothing, and leaves the lock free", async () => {
    const w = world();
    const from = w.seq.length;
    const reset = w.rt.sessionLifecycle.reset("agent:main:gone", { reason: "reset", marker: "sessions.reset (reset)" });
    await expect(reset).rejects.toMatchObject({ code: "not_found", message: 'unknown session "agent:main:gone"' });
    expect(w.seq.slice(from)).toEqual([
      "asks for the lock of agent:main:gone",
      "lock agent:main:gone",
      "unlock agent:main:gone",
    ]);
    // the next one to ask gets the lock at once
    await w.turn("agent:main:gone", "hello");
  });
});

/** A real second process holding the session's lock file until told to let go. */
async function holdLock(lockPath: string): Promise<{ release: () => Promise<void> }> {
  const child: ChildProcess = spawn(process.execPath, [holderScript, "hold", lockPath], {
    env: { ...process.env, WRITE_LOCK_MODULE: distWriteLock },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout! });
  const next = (what: string) =>
    new Promise<void>((resolve, reject) => {
      const onLine = (line: string) => {
        if (line.startsWith(what)) {
          lines.off("line", onLine);
          resolve();
        }
      };
      lines.on("line", onLine);
      child.once("exit", (code) => reject(new Error(`holder exited (${code}) before "${what}"`)));
    });
  await next("acquired");
  let released = false;
  return {
    release: async () => {
      if (released) return;
      released = true;
      const done = next("released");
      child.stdin!.write("release\n");
      await done;
    },
  };
}
