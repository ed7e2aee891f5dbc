/*
 * Session boundaries as a plugin author meets them over a real gateway: a real WebSocket, the real SQLite store in a
 * temp state dir, and a plugin file (test/fixtures/integration/plugins/session-log.mjs, loaded through
 * plugins.load.paths) that writes each session_start / session_end it gets into a file. An internal hook module
 * (hooks.internal) records the command:new / command:reset it gets. Whether a session is reset by typing /reset or
 * by the sessions.reset method, plugins must see the same thing.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeEach, describe, expect, it } from "vitest";
import { connectedPeer, type RawPeer, tempStateDir, useTestGateways, WAIT_MS } from "../fixtures/gateway/harness.js";

const fixtures = fileURLToPath(new URL("../fixtures/integration/", import.meta.url));
const gateway = useTestGateways();

interface Boundary {
  hook: "session_start" | "session_end";
  sessionKey: string;
  generation?: number;
  reason?: string;
  sessionId?: string;
  agentId?: string;
}

function commandLog(): Array<{ hook: string; sessionKey?: string }> {
  const g = globalThis as { __loopgateIntegrationLog?: Array<{ hook: string; sessionKey?: string }> };
  g.__loopgateIntegrationLog ??= [];
  return g.__loopgateIntegrationLog;
}

beforeEach(() => {
  commandLog().length = 0;
});

/** A gateway with the session-log plugin writing into a boundaries.jsonl file, and the command-log hook. */
async function start(): Promise<{ peer: RawPeer; boundaries: (key?: string) => Boundary[] }> {
  // a temp dir of the harness's, removed after the file's tests
  const file = path.join(tempStateDir(), "boundaries.jsonl");
  const { url } = await gateway({
    config: {
      plugins: {
        load: { paths: [path.join(fixtures, "plugins", "session-log.mjs")] },
        entries: { "session-log": { config: { file } } },
      },
      hooks: {
        internal: [
          { events: ["command:new", "command:reset"], module: path.join(fixtures, "hooks/command-log/handler.mjs") },
        ],
      },
    },
  });
  const peer = await connectedPeer(url);
  const boundaries = (key?: string) => {
    const lines = fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
    const all = lines.map((l) => JSON.parse(l) as Boundary);
    return key === undefined ? all : all.filter((b) => b.sessionKey === key);
  };
  return { peer, boundaries };
}

/** Sends a message to the session and waits for its run's final answer. */
async function turn(peer: RawPeer, sessionKey: string, message: string): Promise<void> {
  const id = peer.send("agent", { message, sessionKey, idempotencyKey: `${sessionKey}-${message}-${Math.random()}` });
  const final = await peer.response(id, 2);
  expect(final.ok, JSON.stringify(final.error)).toBe(true);
}

/** Hooks are observers the gateway does not wait for: the file catches up shortly after the reply. */
async function until<T>(read: () => T, done: (v: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const v = read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; have ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** What a plugin can tell apart: which hook, for which generation, why. */
const shape = (bs: Boundary[]) => bs.map((b) => `${b.hook}(gen ${b.generation}${b.reason ? `, ${b.reason}` : ""})`);

describe("session boundaries a plugin sees, whoever resets or deletes the session", () => {
  it("sessions.reset over the gateway fires session_end and session_start exactly like /reset typed in the session", async () => {
    const { peer, boundaries } = await start();
    const typed = "agent:main:typed";
    const byRpc = "agent:main:by-rpc";

    await turn(peer, "typed", "hello");
    await turn(peer, "typed", "/reset");
    await turn(peer, "by-rpc", "hello");
    const reset = await peer.call("sessions.reset", { key: "by-rpc", reason: "reset" });
    expect(reset.payload).toMatchObject({ ok: true, generation: 2 });

    const rpcSeen = await until(
      () => boundaries(byRpc),
      (b) => b.length >= 3,
      "the sessions.reset boundaries",
    );
    const typedSeen = await until(
      () => boundaries(typed),
      (b) => b.length >= 3,
      "the /reset boundaries",
    );
    console.log(`/reset:         ${shape(typedSeen).join(" → ")}`);
    console.log(`sessions.reset: ${shape(rpcSeen).join(" → ")}`);
    expect(shape(typedSeen)).toEqual(["session_start(gen 1)", "session_end(gen 1, reset)", "session_start(gen 2)"]);
    expect(shape(rpcSeen)).toEqual(shape(typedSeen));
    // one session id across the generations, and the agent in the hook context
    expect(new Set(rpcSeen.map((b) => b.sessionId)).size).toBe(1);
    expect(rpcSeen.every((b) => b.agentId === "main")).toBe(true);
    // and the command hook an operator's script listens to
    const commands = await until(commandLog, (c) => c.length >= 2, "both command:reset hooks");
    expect(commands).toEqual([
      { hook: "command:reset", sessionKey: typed },
      { hook: "command:reset", sessionKey: byRpc },
    ]);

    // a later turn starts no second session_start for the generation the reset began
    await turn(peer, "by-rpc", "after the reset");
    await turn(peer, "by-rpc", "/new");
    const after = await until(
      () => boundaries(byRpc),
      (b) => b.length >= 5,
      "the /new boundaries",
    );
    expect(shape(after).slice(3)).toEqual(["session_end(gen 2, new)", "session_start(gen 3)"]);
    peer.close();
  });

  it("sessions.delete fires session_end for the session it deleted", async () => {
    const { peer, boundaries } = await start();
    const key = "agent:main:doomed";
    await turn(peer, "doomed", "hello");
    const del = await peer.call("sessions.delete", { key: "doomed" });
    expect(del.payload).toMatchObject({ ok: true, deleted: true });

    const seen = await until(
      () => boundaries(key),
      (b) => b.length >= 2,
      "the delete's session_end",
    );
    console.log(`sessions.delete: ${shape(seen).join(" → ")}`);
    expect(shape(seen)).toEqual(["session_start(gen 1)", "session_end(gen 1, deleted)"]);
    // nothing for a session that did not exist
    expect((await peer.call("sessions.delete", { key: "doomed" })).payload).toMatchObject({ deleted: false });
    peer.close();
  });

  it("sessions.delete with emitLifecycleHooks false deletes the session without a session_end", async () => {
    const { peer, boundaries } = await start();
    await turn(peer, "quiet", "hello");
    await turn(peer, "loud", "hello");
    const changed: string[] = [];
    peer.ws.on("message", (raw) => {
      const f = JSON.parse(String(raw));
      if (f.event === "sessions.changed") changed.push(`${f.payload?.sessionKey}:${f.payload?.reason}`);
    });
    await peer.call("sessions.subscribe", {});
    // OpenClaw's param is a boolean: anything else is refused, naming it, and deletes nothing
    const bad = await peer.call("sessions.delete", { key: "quiet", emitLifecycleHooks: "no" });
    console.log(`emitLifecycleHooks "no": ${JSON.stringify(bad.error)}`);
    expect(bad.error).toMatchObject({ code: "invalid_params", message: expect.stringContaining("emitLifecycleHooks") });
    const quiet = await peer.call("sessions.delete", { key: "quiet", emitLifecycleHooks: false });
    expect(quiet.payload).toMatchObject({ ok: true, deleted: true });
    // a delete with hooks on, after it: once its session_end is in the file, the quiet one's would be too
    await peer.call("sessions.delete", { key: "loud" });
    await until(
      () => boundaries("agent:main:loud"),
      (b) => b.length >= 2,
      "the second delete's session_end",
    );

    console.log(`emitLifecycleHooks false: ${shape(boundaries("agent:main:quiet")).join(" → ")}`);
    expect(shape(boundaries("agent:main:quiet"))).toEqual(["session_start(gen 1)"]);
    // followers still hear of the deletion
    await until(
      () => changed,
      (c) => c.includes("agent:main:quiet:deleted"),
      "sessions.changed for the quiet delete",
    );
    expect((await peer.call("sessions.get", { key: "quiet" })).error).toMatchObject({ code: "not_found" });
    peer.close();
  });
});
