import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseConfig } from "../config/load.js";
import { silentLogger } from "../infra/logger.js";
import { ManualClock } from "../testing/manual-clock.js";
import { type ExecApprovalEvent, ExecApprovals, type ExecApprovalsOptions } from "./exec-approvals.js";

let stateDir: string;
beforeEach(() => {
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-approvals-"));
});
afterEach(() => fs.rmSync(stateDir, { recursive: true, force: true }));

function approvals(exec: Record<string, unknown>, extra: Partial<ExecApprovalsOptions> = {}) {
  const clock = new ManualClock();
  const events: ExecApprovalEvent[] = [];
  let n = 0;
  const a = new ExecApprovals({
    config: parseConfig({ tools: { exec } }).tools.exec,
    defaultSecurity: "allowlist",
    stateDir,
    clock,
    logger: silentLogger,
    newId: () => `ap-${++n}`,
    ...extra,
  });
  a.subscribe((ev) => events.push(ev));
  return { a, clock, events };
}

const call = (command: string, signal = new AbortController().signal) => ({
  command,
  cwd: "/ws",
  agentId: "main",
  sessionKey: "agent:main:main",
  runId: "run-1",
  toolCallId: "call_1",
  signal,
});

describe("exec approvals", () => {
  it("allowlist patterns saved by an operator (exec.approvals.set) hold at once and after a restart, beside the config's", async () => {
    const first = approvals({ allowlist: ["ls *"] }).a;
    first.setAllowlist(["git status", "npm test *"]);
    expect(await first.check(call("npm test -- --run"))).toEqual({ allowed: true });
    expect(first.effectivePolicy().allowlist).toEqual(["ls *", "git status", "npm test *"]);
    // a new process reads them back from exec-approvals.json; the config's patterns are not written there
    const again = approvals({ allowlist: ["ls *"] }).a;
    expect(again.file().file.allowlist).toEqual(["git status", "npm test *"]);
    expect(await again.check(call("git status"))).toEqual({ allowed: true });
    expect(await again.check(call("ls -la"))).toEqual({ allowed: true });
    // and taking them away takes effect for the next command
    again.setAllowlist([]);
    const waiting = again.check(call("git status"));
    expect(again.pending()).toHaveLength(1);
    again.resolve(again.pending()[0].id, "deny");
    expect(await waiting).toMatchObject({ allowed: false });
  });

  it("a miss waits for an operator; allow-once runs it once and the next identical call asks again", async () => {
    const { a, events } = approvals({ allowlist: ["ls *"], approvalTimeoutSeconds: 60 });
    expect(await a.check(call("ls -la"))).toEqual({ allowed: true });
    const waiting = a.check(call("rm -rf build"));
    expect(a.pending()).toMatchObject([
      {
        id: "ap-1",
        command: "rm -rf build",
        cwd: "/ws",
        runId: "run-1",
        toolCallId: "call_1",
        security: "allowlist",
        ask: "on-miss",
        reason: '"rm -rf build" matches no tools.exec.allowlist pattern',
        expiresAtMs: 1_700_000_060_000,
      },
    ]);
    expect(a.resolve("ap-1", "allow-once")).toMatchObject({
      status: "allowed",
      decision: "allow-once",
      reason: "user",
    });
    expect(await waiting).toEqual({ allowed: true });
    expect(events.map((e) => e.type)).toEqual(["requested", "resolved"]);
    void a.check(call("rm -rf build"));
    expect(a.pending().map((p) => p.id)).toEqual(["ap-2"]);
  });

  it("deny refuses with a reason the model can read", async () => {
    const { a } = approvals({});
    const waiting = a.check(call("rm -rf build"));
    a.resolve("ap-1", "deny");
    expect(await waiting).toEqual({ allowed: false, reason: "an operator denied the command" });
  });

  it("nobody answers: after approvalTimeoutSeconds the command is denied and the expiry is announced", async () => {
    const { a, clock, events } = approvals({ approvalTimeoutSeconds: 30 });
    const waiting = a.check(call("rm -rf build"));
    clock.advance(29_999);
    expect(a.pending()).toHaveLength(1);
    clock.advance(1);
    expect(await waiting).toEqual({
      allowed: false,
      reason: "nobody approved the command within 30s (tools.exec.approvalTimeoutSeconds)",
    });
    expect(events.at(-1)).toEqual({
      type: "resolved",
      resolved: {
        id: "ap-1",
        sessionKey: "agent:main:main",
        runId: "run-1",
        command: "rm -rf build",
        status: "expired",
        reason: "timeout",
        resolvedAtMs: 1_700_000_030_000,
      },
    });
    expect(() => a.resolve("ap-1", "allow-once")).toThrow(
      'exec approval "ap-1" expired at 2023-11-14T22:13:50.000Z: the command was denied',
    );
    expect(() => a.resolve("nope", "allow-once")).toThrow('no pending exec approval "nope" (see exec.approval.list)');
    expect(clock.pendingTimers).toBe(0);
  });

  it("aborting the run ends the wait (cancelled) without an answer", async () => {
    const { a, events, clock } = approvals({});
    const abort = new AbortController();
    const waiting = a.check(call("rm -rf build", abort.signal));
    abort.abort();
    expect(await waiting).toEqual({
      allowed: false,
      reason: "the run was aborted while the command waited for approval",
    });
    expect(events.at(-1)).toMatchObject({ type: "resolved", resolved: { status: "cancelled", reason: "run-aborted" } });
    expect(a.pending()).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });

  it("allow-always is kept in the state dir (0600) and survives a restart, for that agent and exact command only", async () => {
    const first = approvals({});
    const waiting = first.a.check(call("rm  -rf build"));
    first.a.resolve("ap-1", "allow-always");
    expect(await waiting).toEqual({ allowed: true });
    const file = path.join(stateDir, "exec-approvals.json");
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);

    const restarted = approvals({});
    expect(await restarted.a.check(call("rm -rf build"))).toEqual({ allowed: true });
    void restarted.a.check(call("rm -rf build2"));
    void restarted.a.check({ ...call("rm -rf build"), agentId: "other" });
    expect(restarted.a.pending().map((p) => p.command)).toEqual(["rm -rf build2", "rm -rf build"]);
  });

  it("an unreadable approvals file is moved aside with a warning, and the process goes on", async () => {
    fs.writeFileSync(path.join(stateDir, "exec-approvals.json"), "{not json");
    const warnings: string[] = [];
    const { a } = approvals({}, { logger: { ...silentLogger, warn: (m) => warnings.push(m) } });
    expect(warnings[0]).toMatch(/exec-approvals\.json is unreadable .* moved it to .*corrupt-/);
    expect(fs.readdirSync(stateDir).some((f) => f.startsWith("exec-approvals.json.corrupt-"))).toBe(true);
    void a.check(call("rm -rf build"));
    expect(a.pending()).toHaveLength(1);
  });

  it("with a prompt (the CLI's terminal), the prompt answers instead of an operator", async () => {
    const asked: string[] = [];
    const { a } = approvals(
      { security: "full", ask: "always" },
      {
        prompt: async (req) => {
          asked.push(req.command);
          return req.command === "ls" ? "allow-once" : { deny: "no terminal to ask on" };
        },
      },
    );
    expect(await a.check(call("ls"))).toEqual({ allowed: true });
    expect(await a.check(call("rm x"))).toEqual({ allowed: false, reason: "no terminal to ask on" });
    expect(asked).toEqual(["ls", "rm x"]);
  });

  it("approvers are shown the exact command; the resolved event and the allow-always file keep secrets masked", async () => {
    const { a, events } = approvals({});
    const command = "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuv1234 ./deploy";
    const waiting = a.check(call(command));
    expect(a.pending()[0]).toMatchObject({
      command,
      reason: `"${command}" matches no tools.exec.allowlist pattern`,
    });
    a.resolve("ap-1", "allow-always");
    expect(await waiting).toEqual({ allowed: true });
    expect(JSON.stringify(events.filter((e) => e.type === "resolved"))).not.toContain("sk-proj-");
    expect(events.at(-1)).toMatchObject({ resolved: { command: "OPENAI_API_KEY=[redacted] ./deploy" } });
    expect(fs.readFileSync(path.join(stateDir, "exec-approvals.json"), "utf8")).not.toContain("sk-proj-");
    expect(await a.check(call(command))).toEqual({ allowed: true });
    void a.check(call("OPENAI_API_KEY=sk-proj-other0000000000000000000000 ./deploy"));
    expect(a.pending()).toHaveLength(1);
  });

  it("allow-always from an approver confined to some sessions holds in those sessions only, also after a restart", async () => {
    const { a } = approvals({});
    const inA = (key: string) => ({ ...call("make deploy"), sessionKey: key });
    const waiting = a.check(inA("agent:main:a-1"));
    a.resolve("ap-1", "allow-always", { sessions: ["agent:main:a-*"] });
    expect(await waiting).toEqual({ allowed: true });
    expect(await a.check(inA("agent:main:a-2"))).toEqual({ allowed: true });
    void a.check(inA("agent:main:b-1"));
    expect(a.pending().map((p) => p.sessionKey)).toEqual(["agent:main:b-1"]);
    const file = JSON.parse(fs.readFileSync(path.join(stateDir, "exec-approvals.json"), "utf8"));
    expect(file).toMatchObject({ version: 2, allowAlways: [{ sessions: ["agent:main:a-*"] }] });

    const again = approvals({}).a;
    expect(await again.check(inA("agent:main:a-3"))).toEqual({ allowed: true });
    void again.check(inA("agent:main:b-2"));
    expect(again.pending()).toHaveLength(1);
  });

  it("security comes from the caller's default unless tools.exec.security sets it", () => {
    expect(approvals({}).a.policy.security).toBe("allowlist");
    expect(approvals({}, { defaultSecurity: "full" }).a.policy.security).toBe("full");
    expect(approvals({ security: "deny" }, { defaultSecurity: "full" }).a.policy.security).toBe("deny");
  });
});
