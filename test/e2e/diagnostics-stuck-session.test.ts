/**
 * Stuck-session diagnostics as an operator meets them (SPEC 13, issue 13): a real `loopgate gateway` child process
 * (run `npm run build` first), a real WebSocket operator, and the fake model server stalling before its first
 * chunk. With a 1 s warn threshold the operator sees the run reported long-running, then stalled; recovery aborts
 * it, and the message queued behind it still gets its answer.
 */
import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type FakeModelServer, startFakeModelServer } from "../../src/testing/fake-model-server.js";
import { assertBuilt, killHard, spawnGateway } from "../fixtures/crash/gateway-process.js";
import { connectedPeer, type Frame } from "../fixtures/gateway/harness.js";

const WARN_MS = 1000;
const ABORT_MS = 2000;
const STALL_MS = 3500;
const TOKEN = "diag-token";

const children: ChildProcess[] = [];
const dirs: string[] = [];
let server: FakeModelServer | undefined;
afterEach(async () => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
  await server?.close();
  server = undefined;
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function gatewayWithStallingModel(diagnostics: Record<string, unknown>) {
  assertBuilt();
  server = await startFakeModelServer();
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-diag-e2e-")));
  dirs.push(dir);
  const config = path.join(dir, "loopgate.json5");
  fs.writeFileSync(
    config,
    JSON.stringify({
      models: {
        providers: {
          fake: { api: "openai-completions", baseUrl: server.baseUrl, apiKey: "sk-test", models: [{ id: "m" }] },
        },
      },
      agents: { defaults: { model: { primary: "fake/m" } } },
      messages: { queue: { debounceMs: 0 } },
      gateway: { auth: { token: TOKEN } },
      diagnostics,
    }),
  );
  const gw = await spawnGateway(path.join(dir, "state"), config, children);
  return { gw, server, httpBase: gw.url.replace(/^ws/, "http") };
}

const diagnostic = (type: string, runId?: string) => (f: Frame) =>
  f.event === "diagnostic" && f.payload?.type === type && (runId === undefined || f.payload?.runId === runId);

describe("stuck-session diagnostics, live", () => {
  it("a model that stalls is reported long-running, then stalled and aborted, and the message queued behind it still answers", async () => {
    const { gw, server, httpBase } = await gatewayWithStallingModel({
      enabled: true,
      stuckSessionWarnMs: WARN_MS,
      stuckSessionAbortMs: ABORT_MS,
    });
    server.enqueue({ text: ["never ", "seen"], delayMs: STALL_MS }, { text: ["queued ", "answer"] });
    const operator = await connectedPeer(gw.url, { token: TOKEN });

    const stalled = operator.send("agent", { message: "think hard", idempotencyKey: "stall-1", sessionKey: "desk" });
    expect((await operator.response(stalled)).payload).toMatchObject({ status: "accepted" });
    const queued = operator.send("agent", {
      message: "and then this",
      idempotencyKey: "behind-1",
      sessionKey: "desk",
      queueMode: "followup",
    });
    expect((await operator.response(queued)).payload).toMatchObject({ receipt: { kind: "queued", position: 1 } });

    const longRunning = await operator.seen(diagnostic("session.long_running", "stall-1"), "session.long_running");
    expect(longRunning.payload).toMatchObject({
      sessionKey: "agent:main:desk",
      activity: "model",
      owned: true,
      queued: 1,
    });
    expect(Number(longRunning.payload?.idleMs)).toBeGreaterThanOrEqual(WARN_MS);

    const stalledEvent = await operator.seen(diagnostic("session.stalled", "stall-1"), "session.stalled");
    expect(stalledEvent.payload).toMatchObject({ activity: "model", owned: true });
    expect(Number(stalledEvent.payload?.idleMs)).toBeGreaterThanOrEqual(ABORT_MS);
    // the stalled event came after the long-running one
    expect(operator.frames.indexOf(stalledEvent)).toBeGreaterThan(operator.frames.indexOf(longRunning));

    const completed = await operator.seen(
      (f) => diagnostic("session.recovery", "stall-1")(f) && f.payload?.phase === "completed",
      "the recovery's result",
    );
    expect(completed.payload).toMatchObject({ action: "abort_run", outcome: "aborted", cause: "session.stalled" });

    const stalledFinal = await operator.response(stalled, 2);
    expect(stalledFinal.payload).toMatchObject({ runId: "stall-1", summary: "aborted" });
    const queuedFinal = await operator.response(queued, 2);
    expect(queuedFinal.payload).toMatchObject({ runId: "behind-1", status: "ok", summary: "completed" });
    expect(JSON.stringify(queuedFinal.payload)).toContain("queued answer");

    // the same story is in diagnostics.list, with the thresholds from the config
    const list = await operator.call("diagnostics.list");
    expect(list.payload).toMatchObject({ enabled: true, stuckSessionWarnMs: WARN_MS, stuckSessionAbortMs: ABORT_MS });
    const recent = ((list.payload?.recent ?? []) as Array<{ type: string; phase?: string }>).map((d) =>
      d.type === "session.recovery" ? `${d.type}:${d.phase}` : d.type,
    );
    expect(recent).toContain("session.long_running");
    expect(recent).toContain("session.stalled");
    expect(recent).toContain("session.recovery:completed");

    // /health: the details for a token that may read, only up/down for anyone else
    const anonymous = await fetch(`${httpBase}/health`);
    expect(anonymous.status).toBe(200);
    expect(await anonymous.json()).toEqual({ ok: true });
    const withToken = await fetch(`${httpBase}/health`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await withToken.json()).toMatchObject({ ok: true, activeRuns: 0, queueDepth: 0, stuckSessions: 0 });
    const wrongToken = await fetch(`${httpBase}/health`, { headers: { authorization: "Bearer nope" } });
    expect(await wrongToken.json()).toEqual({ ok: true });
    operator.close();
    await killHard(gw);
  });

  it("with diagnostics off the same stall produces no diagnostic: the run simply waits for the model", async () => {
    const { gw, server } = await gatewayWithStallingModel({ stuckSessionWarnMs: WARN_MS });
    server.enqueue({ text: ["slow ", "answer"], delayMs: STALL_MS });
    const operator = await connectedPeer(gw.url, { token: TOKEN });
    const run = operator.send("agent", { message: "think hard", idempotencyKey: "slow-1", sessionKey: "desk" });
    const final = await operator.response(run, 2);
    expect(final.payload).toMatchObject({ status: "ok" });
    expect(operator.all((f) => f.event === "diagnostic")).toEqual([]);
    expect((await operator.call("diagnostics.list")).payload).toMatchObject({
      enabled: false,
      sessions: [],
      recent: [],
    });
    operator.close();
    await killHard(gw);
  });
});
