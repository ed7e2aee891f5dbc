/*
 * Small wire bugs of issue 27 (item 7), each pinned through a real gateway on a real WebSocket and a real SQLite
 * store; the model is the TestProvider (harness.ts), whose turns wait on gates the test opens.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { ModelProvider, ModelStreamEvent } from "../../src/providers/types.js";
import { sessionLockFile } from "../../src/session/file-lock.js";
import {
  connectedPeer,
  deferred,
  isLifecycleEnd,
  runEvents,
  TestProvider,
  useTestGateways,
} from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** A real second process holding a session's lock file (test/fixtures/write-lock/holder.mjs) until released. */
async function holdLockInAnotherProcess(lockPath: string): Promise<{ release: () => Promise<void> }> {
  const child = spawn(process.execPath, [path.join(repo, "test/fixtures/write-lock/holder.mjs"), "hold", lockPath], {
    env: { ...process.env, WRITE_LOCK_MODULE: path.join(repo, "dist/session/write-lock.js") },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout });
  const line = (what: string) =>
    new Promise<void>((resolve, reject) => {
      lines.on("line", (l) => l.startsWith(what) && resolve());
      child.once("exit", (code) => reject(new Error(`lock holder exited (${code}) before "${what}"`)));
    });
  await line("acquired");
  return {
    release: async () => {
      const released = line("released");
      child.stdin.write("release\n");
      await released;
    },
  };
}

describe("wire errors", () => {
  it("param-error-prefixed-once", async () => {
    const { url } = await gateway();
    const peer = await connectedPeer(url);
    const id = peer.send("agent", { message: "hi", sessionId: "no-such-session", idempotencyKey: "p-1" });
    const res = await peer.response(id);
    console.log(`unknown sessionId: ${JSON.stringify(res.error)}`);
    expect(res.error).toMatchObject({ code: "invalid_params" });
    expect(res.error?.message).toBe('params.sessionId: unknown session id "no-such-session"');
    const mode = await peer.response(peer.send("agent", { message: "hi", queueMode: "later", idempotencyKey: "p-2" }));
    console.log(`bad queueMode: ${JSON.stringify(mode.error)}`);
    expect(mode.error?.message).toMatch(/^params\.queueMode: (?!queueMode)/);
    peer.close();
  });
});

describe("run error kinds", () => {
  it("session-busy-has-its-kind", async () => {
    const { url, stateDir } = await gateway({ config: { session: { writeLock: { acquireTimeoutMs: 200 } } } });
    // another writer holds the session's write lock past the gateway's acquire timeout
    const held = await holdLockInAnotherProcess(sessionLockFile(stateDir, "agent:main:main"));
    try {
      const peer = await connectedPeer(url);
      const id = peer.send("agent", { message: "hi", idempotencyKey: "busy-1" });
      const final = await peer.response(id, 2);
      const end = await peer.seen(isLifecycleEnd("busy-1"), "the run's terminal lifecycle event");
      const wait = await peer.response(peer.send("agent.wait", { runId: "busy-1", timeoutMs: 1000 }));
      console.log(
        `busy run: lifecycle ${JSON.stringify(end.payload?.data)}; agent.wait ${JSON.stringify(wait.payload)}`,
      );
      // the lifecycle kind is Loopgate's own word; the final and agent.wait carry the text, which says who holds it
      expect(end.payload?.data).toMatchObject({ phase: "error", kind: "session_busy" });
      expect(final.payload).toMatchObject({
        status: "error",
        error: expect.stringMatching(/^session is busy: .* held by pid \d+/),
      });
      expect(wait.payload).toMatchObject({ status: "error", error: expect.stringMatching(/^session is busy/) });
      peer.close();
    } finally {
      await held.release();
    }
  });
});

describe("agent.wait", () => {
  it("agent-wait-timeout-has-started-at", async () => {
    const gate = deferred();
    const { url } = await gateway({ provider: new TestProvider(() => ({ before: ["thinking"], gate: gate.promise })) });
    const peer = await connectedPeer(url);
    const id = peer.send("agent", { message: "hi", idempotencyKey: "slow-1" });
    const accepted = await peer.response(id, 1);
    await peer.seen((f) => f.event === "agent" && f.payload?.runId === "slow-1", "the run started");
    const wait = await peer.response(peer.send("agent.wait", { runId: "slow-1", timeoutMs: 50 }));
    console.log(`agent.wait on a running run, timed out: ${JSON.stringify(wait.payload)}`);
    expect(wait.payload).toMatchObject({ runId: "slow-1", status: "timeout", startedAt: expect.any(Number) });
    expect(wait.payload?.startedAt as number).toBeGreaterThanOrEqual(accepted.payload?.acceptedAt as number);
    gate.resolve();
    await peer.response(id, 2);
    peer.close();
  });

  it("agent-wait-on-another-process-run-waits", async () => {
    const { url, gw } = await gateway();
    // a run this gateway does not run: `loopgate agent --local` in another process on the same state dir
    const store = gw.service.rt.store;
    const now = Date.now();
    await store.ensureSession("agent:main:cli", "main", now);
    await store.createRun({
      runId: "elsewhere-1",
      sessionKey: "agent:main:cli",
      status: "running",
      acceptedAt: now,
      startedAt: now,
      params: { message: "hi" },
    });
    const peer = await connectedPeer(url);
    const sent = Date.now();
    const id = peer.send("agent.wait", { runId: "elsewhere-1", timeoutMs: 20_000 });
    // the other process is still running it: no answer yet (the old code answered `timeout` at once)
    await new Promise((r) => setTimeout(r, 300));
    const early = peer.all((f) => f.type === "res" && f.id === id);
    console.log(`answers within 300 ms of asking: ${JSON.stringify(early.map((f) => f.payload))}`);
    expect(early).toEqual([]);
    await store.updateRun("elsewhere-1", { status: "ok", endedAt: Date.now(), stopReason: "stop" });
    const wait = await peer.response(id);
    console.log(`agent.wait answered after ${Date.now() - sent} ms: ${JSON.stringify(wait.payload)}`);
    expect(wait.payload).toMatchObject({ runId: "elsewhere-1", status: "ok", startedAt: now });
    const short = await peer.response(peer.send("agent.wait", { runId: "elsewhere-1", timeoutMs: 10 }));
    expect(short.payload).toMatchObject({ status: "ok" });
    peer.close();
  });
});

describe("tool text", () => {
  it("tool-text-data-url-omitted", async () => {
    // a real exec printing a 3000-byte PNG-typed data URL into its text output
    const command = "printf 'data:image/png;base64,%s' $(head -c 3000 /dev/urandom | base64 -w0); echo ' done'";
    let modelSaw = "";
    const provider = new TestProvider((req, i) => {
      if (i === 0) return { toolCalls: [{ id: "call_dataurl", name: "exec", arguments: { command } }] };
      const result = req.messages.find((m) => m.role === "toolResult");
      modelSaw = JSON.stringify(result?.content);
      return { before: ["seen"] };
    });
    const { url } = await gateway({ provider, config: { tools: { exec: { security: "full", ask: "off" } } } });
    const peer = await connectedPeer(url);
    const id = peer.send("agent", { message: "print it", idempotencyKey: "dataurl-1" });
    expect((await peer.response(id, 2)).payload).toMatchObject({ status: "ok" });
    const result = runEvents(peer, "dataurl-1").find(
      (e) => e.stream === "tool" && (e.data as { phase?: string }).phase === "result",
    );
    const eventText = String((result?.data as { result?: unknown } | undefined)?.result);
    console.log(`tool result event: ${JSON.stringify(eventText)}; the model saw: ${modelSaw}`);
    const placeholder = /\[data:image\/png;base64, \d+(\.\d)? KB omitted\]/;
    expect(eventText).toMatch(placeholder);
    expect(eventText).toContain("done");
    expect(eventText).not.toMatch(/base64,[A-Za-z0-9+/]{64}/);
    expect(modelSaw).toMatch(placeholder);
    expect(modelSaw).not.toMatch(/base64,[A-Za-z0-9+/]{64}/);
    peer.close();
  });
});

/** A model that thinks aloud before it answers: what a run shows of the thinking is the reasoning level's to decide. */
function thinkingModel(): ModelProvider {
  return {
    id: "t",
    api: "scripted",
    async *stream(): AsyncGenerator<ModelStreamEvent> {
      yield { type: "thinking_delta", delta: "weighing it" };
      yield { type: "thinking_end", thinking: "weighing it" };
      yield { type: "text_delta", delta: "answer" };
      yield { type: "done", stopReason: "stop", usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 } };
    },
  };
}

describe("session and run settings that were accepted and dropped", () => {
  it("agent-label-names-the-session", async () => {
    const { url } = await gateway();
    const peer = await connectedPeer(url);
    const id = peer.send("agent", {
      message: "hi",
      sessionKey: "triage",
      label: "Inbox triage",
      idempotencyKey: "l-1",
    });
    expect((await peer.response(id, 2)).payload).toMatchObject({ status: "ok" });
    const found = await peer.call("sessions.resolve", { label: "Inbox triage" });
    const list = await peer.call("sessions.list", {});
    const row = ((list.payload?.sessions ?? []) as Array<{ key: string; label?: string }>).find((x) =>
      x.key.endsWith("triage"),
    );
    console.log(
      `sessions.resolve by label: ${JSON.stringify(found.payload ?? found.error)}; listed: ${JSON.stringify(row?.label)}`,
    );
    expect(found.payload).toMatchObject({ key: "agent:main:triage" });
    expect(row?.label).toBe("Inbox triage");
    peer.close();
  });

  it("sessions-patch-reasoning-level-is-used", async () => {
    // TestProvider is the harness's model slot; a model that streams thinking plays it here
    const { url } = await gateway({ provider: thinkingModel() as unknown as TestProvider });
    const peer = await connectedPeer(url);
    const thinkingOf = (runId: string) => runEvents(peer, runId).filter((e) => e.stream === "thinking");
    const first = peer.send("agent", { message: "one", sessionKey: "r", idempotencyKey: "r-1" });
    expect((await peer.response(first, 2)).payload).toMatchObject({ status: "ok" });
    // agents.defaults.reasoningDefault is "off": nothing of the thinking is shown
    expect(thinkingOf("r-1")).toEqual([]);
    const patched = await peer.call("sessions.patch", { key: "agent:main:r", reasoningLevel: "stream" });
    console.log(`sessions.patch reasoningLevel: ${JSON.stringify(patched.payload ?? patched.error)}`);
    expect(patched.payload).toMatchObject({ ok: true, session: { reasoningLevel: "stream" } });
    const second = peer.send("agent", { message: "two", sessionKey: "r", idempotencyKey: "r-2" });
    expect((await peer.response(second, 2)).payload).toMatchObject({ status: "ok" });
    console.log(`thinking events after the patch: ${thinkingOf("r-2").length}`);
    expect(thinkingOf("r-2").length).toBeGreaterThan(0);
    // null clears it: the agent's default applies again
    await peer.call("sessions.patch", { key: "agent:main:r", reasoningLevel: null });
    const third = peer.send("agent", { message: "three", sessionKey: "r", idempotencyKey: "r-3" });
    expect((await peer.response(third, 2)).payload).toMatchObject({ status: "ok" });
    expect(thinkingOf("r-3")).toEqual([]);
    peer.close();
  });

  it("sessions-patch-trace-level-refused", async () => {
    const { url } = await gateway();
    const peer = await connectedPeer(url);
    const id = peer.send("agent", { message: "hi", sessionKey: "t", idempotencyKey: "t-1" });
    await peer.response(id, 2);
    const refused = await peer.call("sessions.patch", { key: "agent:main:t", traceLevel: "debug" });
    console.log(`sessions.patch traceLevel: ${JSON.stringify(refused.error ?? refused.payload)}`);
    expect(refused.error).toMatchObject({ code: "invalid_params" });
    expect(refused.error?.message).toMatch(/^params\.traceLevel: /);
    // clearing it asks for nothing Loopgate lacks: accepted
    expect((await peer.call("sessions.patch", { key: "agent:main:t", traceLevel: null })).payload).toMatchObject({
      ok: true,
    });
    peer.close();
  });
});
