/*
 * Exec approvals end to end: a real gateway, real WebSocket clients, the OpenAI Chat Completions provider against
 * the fake model server on loopback, and the real exec tool running /bin/sh in a temp workspace. The model asks for
 * `rm -rf build`; the gateway's default policy (allowlist, ask on-miss) makes the run wait for an operator.
 * The approval timeout runs on a manual clock (no sleeping).
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeModelServer, startFakeModelServer } from "../../src/testing/fake-model-server.js";
import { ManualClock } from "../../src/testing/manual-clock.js";
import { connectedPeer, type Frame, type RawPeer, tempStateDir, useTestGateways } from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();
let server: FakeModelServer;
beforeAll(async () => {
  server = await startFakeModelServer();
});
afterAll(() => server.close());

/** A gateway whose agent runs on the fake model server, with `exec` as tools.exec (security left to the default). */
async function approvalGateway(
  exec: Record<string, unknown> = {},
  clock?: ManualClock,
  modelTurns = true,
  auth?: Record<string, unknown>,
) {
  const workspace = tempStateDir();
  fs.mkdirSync(path.join(workspace, "build"));
  const g = await gateway({
    config: {
      agents: { defaults: { model: { primary: "fake/m" }, workspace } },
      models: {
        providers: {
          fake: { api: "openai-completions", baseUrl: server.baseUrl, apiKey: "sk-config", models: [{ id: "m" }] },
        },
      },
      tools: { exec },
      ...(auth ? { gateway: { auth } } : {}),
    },
    gateway: clock ? { clock } : {},
  });
  // the model asks for the command, then answers after reading the tool result
  if (modelTurns)
    server.enqueue(
      { toolCalls: [{ id: "call_rm", name: "exec", arguments: { command: "rm -rf build" } }] },
      { text: "Done." },
    );
  const token = auth ? "root" : undefined;
  const operator = await connectedPeer(g.url, { token, scopes: ["operator.approvals", "operator.read"] });
  const writer = await connectedPeer(g.url, { token, scopes: ["operator.write"] });
  return { ...g, workspace, operator, writer };
}

const isEvent = (name: string) => (f: Frame) => f.type === "event" && f.event === name;

function toolResult(peer: RawPeer, runId: string): Record<string, unknown> | undefined {
  const frame = peer.all(
    (f) =>
      f.event === "agent" &&
      f.payload?.runId === runId &&
      f.payload?.stream === "tool" &&
      (f.payload?.data as { phase?: string })?.phase === "result",
  )[0];
  return frame?.payload?.data as Record<string, unknown> | undefined;
}

describe("exec approvals through the gateway", () => {
  it("a miss waits for approval (exec.approval.requested); deny gives the model an error and the run goes on", async () => {
    const { operator, writer, workspace } = await approvalGateway();
    const sent = writer.send("agent", { message: "clean the build", idempotencyKey: "run-deny" });

    const requested = (await operator.next(isEvent("exec.approval.requested"), "the approval request")).payload!;
    expect(requested).toMatchObject({
      command: "rm -rf build",
      cwd: workspace,
      agentId: "main",
      sessionKey: "agent:main:main",
      runId: "run-deny",
      toolCallId: "call_rm",
      security: "allowlist",
      ask: "on-miss",
      reason: '"rm -rf build" matches no tools.exec.allowlist pattern',
    });
    expect(requested.expiresAtMs).toBe((requested.createdAtMs as number) + 120_000);
    // the run's own client sees it wait, and for what
    const waiting = await writer.seen(
      (f) => f.event === "agent" && (f.payload?.data as { for?: string })?.for === "approval",
      "the lifecycle waiting event",
    );
    expect(waiting.payload?.data).toEqual({
      phase: "waiting",
      for: "approval",
      approvalId: requested.id,
      command: "rm -rf build",
      expiresAtMs: requested.expiresAtMs,
      reason: '"rm -rf build" matches no tools.exec.allowlist pattern',
      // why the policy is what it is: this gateway does not sandbox its runs
      sandbox: {
        sandboxed: false,
        reason: 'not sandboxed (agents.defaults.sandbox.mode is "off"): tools.exec.security "allowlist" (the default)',
      },
    });
    expect((await operator.call("exec.approval.list")).payload).toEqual({ approvals: [requested] });

    // an operator.write client neither sees approvals nor answers them
    const refused = await writer.call("exec.approval.resolve", { id: requested.id, decision: "allow-once" });
    expect(refused.error).toMatchObject({
      code: "unauthorized",
      details: { code: "MISSING_SCOPE", missingScope: "operator.approvals" },
    });
    expect(writer.all((f) => String(f.event).startsWith("exec.approval"))).toEqual([]);

    const answer = await operator.call("exec.approval.resolve", { id: requested.id, decision: "deny" });
    expect(answer.payload).toMatchObject({ id: requested.id, status: "denied", decision: "deny", reason: "user" });
    expect((await writer.response(sent, 2)).payload).toMatchObject({ runId: "run-deny", status: "ok" });

    expect(toolResult(writer, "run-deny")).toMatchObject({
      isError: true,
      result: "exec denied: an operator denied the command",
    });
    const toolMessage = (server.requests.at(-1)!.body.messages as Array<{ role: string; content: string }>).find(
      (m) => m.role === "tool",
    );
    expect(toolMessage?.content).toBe("exec denied: an operator denied the command");
    expect(fs.existsSync(path.join(workspace, "build"))).toBe(true);
    expect((await operator.seen(isEvent("exec.approval.resolved"))).payload).toMatchObject({
      id: requested.id,
      status: "denied",
    });
    // answering twice is a clear error
    const again = await operator.call("exec.approval.resolve", { id: requested.id, decision: "allow-once" });
    expect(again.error).toMatchObject({
      code: "not_found",
      message: `params.id: exec approval "${requested.id}" was already denied`,
    });
  });

  it("allow-once runs the command", async () => {
    const { operator, writer, workspace } = await approvalGateway();
    const sent = writer.send("agent", { message: "clean the build", idempotencyKey: "run-allow" });
    const requested = (await operator.next(isEvent("exec.approval.requested"))).payload!;
    expect((await operator.call("exec.approval.resolve", { id: requested.id, decision: "allow-once" })).ok).toBe(true);
    expect((await writer.response(sent, 2)).payload).toMatchObject({ status: "ok" });
    expect(toolResult(writer, "run-allow")).toMatchObject({ isError: false, result: "(no output)\n\nexit code 0" });
    expect(fs.existsSync(path.join(workspace, "build"))).toBe(false);
  });

  it("an approver whose token does not grant the session neither sees nor answers its approvals", async () => {
    const tokens = [{ token: "support-approver", scopes: ["operator.approvals"], sessions: ["agent:main:support-*"] }];
    const { operator, writer, url } = await approvalGateway({}, undefined, true, { token: "root", tokens });
    const outsider = await connectedPeer(url, { token: "support-approver" });
    const sent = writer.send("agent", { message: "clean", idempotencyKey: "run-grant" });
    const requested = (await operator.next(isEvent("exec.approval.requested"))).payload!;
    expect((await outsider.call("exec.approval.list")).payload).toEqual({ approvals: [] });
    const refused = await outsider.call("exec.approval.resolve", { id: requested.id, decision: "allow-once" });
    expect(refused.error).toMatchObject({
      code: "forbidden",
      message:
        'this client may not answer exec approvals of session "agent:main:main": its token grants sessions agent:main:support-*',
    });
    await operator.call("exec.approval.resolve", { id: requested.id, decision: "deny" });
    await writer.response(sent, 2);
    expect(outsider.all((f) => String(f.event).startsWith("exec.approval"))).toEqual([]);
  });

  it("an unknown id and a bad decision are clear errors", async () => {
    const { operator } = await approvalGateway({}, undefined, false);
    expect((await operator.call("exec.approval.resolve", { id: "nope", decision: "allow-once" })).error).toMatchObject({
      code: "not_found",
      message: 'params.id: no pending exec approval "nope" (see exec.approval.list)',
    });
    const bad = await operator.call("exec.approval.resolve", { id: "x", decision: "maybe" });
    expect(bad.error?.code).toBe("invalid_params");
    expect(bad.error?.message).toMatch(/^params\.decision: .*"allow-once".*"allow-always".*"deny"/);
  });

  it("nobody answers: after the timeout the command is denied, the model is told, and operators see it expired", async () => {
    const clock = new ManualClock(Date.now());
    const { operator, writer, workspace } = await approvalGateway({ approvalTimeoutSeconds: 30 }, clock);
    const sent = writer.send("agent", { message: "clean the build", idempotencyKey: "run-expire" });
    const requested = (await operator.next(isEvent("exec.approval.requested"))).payload!;
    clock.advance(30_000);
    expect((await operator.next(isEvent("exec.approval.resolved"))).payload).toMatchObject({
      id: requested.id,
      status: "expired",
      reason: "timeout",
    });
    expect((await writer.response(sent, 2)).payload).toMatchObject({ status: "ok" });
    expect(toolResult(writer, "run-expire")).toMatchObject({
      isError: true,
      result: "exec denied: nobody approved the command within 30s (tools.exec.approvalTimeoutSeconds)",
    });
    expect(fs.existsSync(path.join(workspace, "build"))).toBe(true);
    const late = await operator.call("exec.approval.resolve", { id: requested.id, decision: "allow-once" });
    expect(late.error?.message).toMatch(/^params\.id: exec approval ".+" expired at .*: the command was denied$/);
  });

  it("allow-always runs it and every later run of the same command, also after a gateway restart", async () => {
    const first = await approvalGateway();
    const sent = first.writer.send("agent", { message: "clean", idempotencyKey: "run-always" });
    const requested = (await first.operator.next(isEvent("exec.approval.requested"))).payload!;
    await first.operator.call("exec.approval.resolve", { id: requested.id, decision: "allow-always" });
    expect((await first.writer.response(sent, 2)).payload).toMatchObject({ status: "ok" });
    expect(fs.existsSync(path.join(first.workspace, "build"))).toBe(false);
    await first.gw.close();

    const again = await gateway({
      stateDir: first.stateDir,
      config: {
        agents: { defaults: { model: { primary: "fake/m" }, workspace: first.workspace } },
        models: {
          providers: {
            fake: { api: "openai-completions", baseUrl: server.baseUrl, apiKey: "sk-config", models: [{ id: "m" }] },
          },
        },
      },
    });
    fs.mkdirSync(path.join(first.workspace, "build"));
    server.enqueue(
      { toolCalls: [{ id: "call_rm", name: "exec", arguments: { command: "rm -rf build" } }] },
      { text: "Done." },
    );
    const writer = await connectedPeer(again.url);
    const res = await writer.response(writer.send("agent", { message: "clean", idempotencyKey: "run-after" }), 2);
    expect(res.payload).toMatchObject({ status: "ok" });
    expect(writer.all(isEvent("exec.approval.requested"))).toEqual([]);
    expect(fs.existsSync(path.join(first.workspace, "build"))).toBe(false);
  });

  it("approver-sees-the-exact-command: a command the secret mask would change is shown to approvers as it will run", async () => {
    // The mask turns `TOKEN=$(touch${IFS}pwned)` into `TOKEN=[redacted]`: an approver shown that would approve a
    // payload that looks harmless. Approvers get the exact text; the run's event stream keeps the mask.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's ${IFS}, not a template placeholder
    const payload = "TOKEN=$(touch${IFS}pwned) echo harmless";
    const { operator, writer, workspace } = await approvalGateway({}, undefined, false);
    server.enqueue({ toolCalls: [{ id: "call_p", name: "exec", arguments: { command: payload } }] }, { text: "ok" });
    const sent = writer.send("agent", { message: "say hi", idempotencyKey: "run-exact" });
    const requested = (await operator.next(isEvent("exec.approval.requested"), "the approval request")).payload!;
    console.log(`[approvals] approver shown: ${String(requested.command)}`);
    expect(requested.command).toBe(payload);
    expect(JSON.stringify(requested)).not.toContain("[redacted]");
    expect((await operator.call("exec.approval.list")).payload).toEqual({ approvals: [requested] });
    const waiting = await writer.seen(
      (f) => f.event === "agent" && (f.payload?.data as { for?: string })?.for === "approval",
      "the lifecycle waiting event",
    );
    expect(waiting.payload?.data).toMatchObject({ command: "TOKEN=[redacted] echo harmless" });
    await operator.call("exec.approval.resolve", { id: requested.id, decision: "deny" });
    expect((await writer.response(sent, 2)).payload).toMatchObject({ status: "ok" });
    const resolved = (await operator.seen(isEvent("exec.approval.resolved"))).payload!;
    expect(resolved.command).toBe("TOKEN=[redacted] echo harmless");
    expect(fs.existsSync(path.join(workspace, "pwned"))).toBe(false);
  });

  it("allow-always-from-a-tenant-approver-stays-in-its-sessions: it never widens another tenant's exec policy", async () => {
    const tokens = [{ token: "tenant-a-approver", scopes: ["operator.approvals"], sessions: ["agent:main:a-*"] }];
    const { operator, writer, url, workspace } = await approvalGateway({}, undefined, false, { token: "root", tokens });
    const tenantA = await connectedPeer(url, { token: "tenant-a-approver", scopes: ["operator.approvals"] });
    const rmTurn = () =>
      server.enqueue(
        { toolCalls: [{ id: "call_rm", name: "exec", arguments: { command: "rm -rf build" } }] },
        { text: "Done." },
      );

    rmTurn();
    const inA = writer.send("agent", { message: "clean", sessionKey: "a-1", idempotencyKey: "run-a1" });
    const askedA = (await tenantA.next(isEvent("exec.approval.requested"), "tenant a's approval")).payload!;
    expect(askedA.sessionKey).toBe("agent:main:a-1");
    const answer = await tenantA.call("exec.approval.resolve", { id: askedA.id, decision: "allow-always" });
    expect(answer.payload).toMatchObject({ status: "allowed", decision: "allow-always" });
    expect((await writer.response(inA, 2)).payload).toMatchObject({ status: "ok" });

    // another session of tenant a: the answer holds there
    fs.mkdirSync(path.join(workspace, "build"));
    rmTurn();
    const inA2 = writer.send("agent", { message: "clean", sessionKey: "a-2", idempotencyKey: "run-a2" });
    expect((await writer.response(inA2, 2)).payload).toMatchObject({ status: "ok" });
    expect(fs.existsSync(path.join(workspace, "build"))).toBe(false);
    expect(operator.all((f) => f.event === "exec.approval.requested" && f.payload?.runId === "run-a2")).toEqual([]);

    // tenant b's session: tenant a's approver could not answer there, so its allow-always does not apply there
    fs.mkdirSync(path.join(workspace, "build"));
    rmTurn();
    const inB = writer.send("agent", { message: "clean", sessionKey: "b-1", idempotencyKey: "run-b1" });
    const askedB = (
      await operator.next(
        (f) => f.event === "exec.approval.requested" && f.payload?.runId === "run-b1",
        "tenant b's run asks again",
      )
    ).payload!;
    console.log(`[approvals] tenant b asked again: ${String(askedB.sessionKey)} ${String(askedB.command)}`);
    await operator.call("exec.approval.resolve", { id: askedB.id, decision: "deny" });
    expect((await writer.response(inB, 2)).payload).toMatchObject({ status: "ok" });
    expect(fs.existsSync(path.join(workspace, "build"))).toBe(true);
  });
});
