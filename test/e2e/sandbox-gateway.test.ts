/*
 * The sandbox end to end: a real `loopgate gateway` process whose agents run with agents.defaults.sandbox.mode "all"
 * on the bubblewrap backend (real bwrap), the OpenAI Chat Completions provider against the fake model server on
 * loopback (its key only in the gateway's environment), real WebSocket clients. Each case has the model call one
 * tool and checks what came back: what a user of a sandboxed gateway would see.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeModelServer, startFakeModelServer } from "../../src/testing/fake-model-server.js";
import { bubblewrapUnavailable } from "../../src/tools/sandbox/bwrap-availability.test-support.js";
import { type ChildGateway, startChildGateway } from "../fixtures/gateway/child-gateway.js";
import { connectedPeer, type Frame, type RawPeer } from "../fixtures/gateway/harness.js";

const PROVIDER_KEY = "sk-sandbox-e2e-provider-key-0123456789";
let unavailable: string | undefined;
let server: FakeModelServer;
let gw: ChildGateway;
let writer: RawPeer;
let operator: RawPeer;
let admin: RawPeer;
let runs = 0;
let dataDir: string;

beforeAll(async () => {
  unavailable = await bubblewrapUnavailable();
  if (unavailable) return;
  server = await startFakeModelServer();
  dataDir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-sbx-data-")));
  fs.writeFileSync(path.join(dataDir, "ref.txt"), "reference data");
  gw = await startChildGateway(
    {},
    {
      env: { SBX_E2E_KEY: PROVIDER_KEY, SBX_PASSED: "visible-inside" },
      config: {
        agents: {
          defaults: {
            model: { primary: "fake/m" },
            sandbox: { mode: "all", scope: "session", workspaceAccess: "rw", env: ["SBX_PASSED"] },
          },
          list: [
            { id: "main", default: true },
            {
              id: "reader",
              sandbox: { workspaceAccess: "ro", binds: [`${dataDir}:/data`], timeoutSeconds: 1, memoryMb: 256 },
            },
            { id: "fresh", sandbox: { workspaceAccess: "none" } },
            { id: "host", sandbox: { mode: "off" } },
          ],
        },
        models: {
          providers: {
            fake: {
              api: "openai-completions",
              baseUrl: server.baseUrl,
              // biome-ignore lint/suspicious/noTemplateCurlyInString: an env reference, resolved in the gateway
              apiKey: "${SBX_E2E_KEY}",
              models: [{ id: "m" }],
            },
          },
        },
      },
    },
  );
  writer = await connectedPeer(gw.url, { scopes: ["operator.write", "operator.read"] });
  operator = await connectedPeer(gw.url, { scopes: ["operator.approvals", "operator.read"] });
  admin = await connectedPeer(gw.url, { scopes: ["operator.admin", "operator.read"] });
}, 30_000);

afterAll(async () => {
  for (const p of [writer, operator, admin]) p?.close();
  gw?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  await server?.close();
});

/** The model calls `tool` once with `args`, then says "done"; returns the tool's result as the run's client saw it. */
async function toolCall(
  agentId: string,
  sessionKey: string,
  tool: string,
  args: Record<string, unknown>,
  during?: (runId: string) => Promise<void>,
): Promise<{ isError: boolean; result: string }> {
  const runId = `sbx-run-${++runs}`;
  server.enqueue({ toolCalls: [{ id: `call_${runs}`, name: tool, arguments: args }] }, { text: "done" });
  const sent = writer.send("agent", { message: `please ${tool}`, agentId, sessionKey, idempotencyKey: runId });
  await during?.(runId);
  expect((await writer.response(sent, 2)).payload).toMatchObject({ runId, status: "ok" });
  const frame = writer.all(
    (f) =>
      f.event === "agent" &&
      f.payload?.runId === runId &&
      f.payload?.stream === "tool" &&
      (f.payload?.data as { phase?: string })?.phase === "result",
  )[0];
  return frame.payload!.data as { isError: boolean; result: string };
}

const exec = (agentId: string, sessionKey: string, command: string, during?: (runId: string) => Promise<void>) =>
  toolCall(agentId, sessionKey, "exec", { command }, during);
const approvalsAsked = () => operator.all((f: Frame) => f.event === "exec.approval.requested");
const mainWorkspace = () => path.join(gw.dir, "state", "workspace");

describe('a gateway with agents.defaults.sandbox.mode "all" (bubblewrap)', () => {
  it("touch /usr/x fails: the system is read-only, and the command ran without waiting for approval", async (t) => {
    if (unavailable) return t.skip(unavailable);
    const before = approvalsAsked().length;
    const r = await exec("main", "agent:main:e2e", "touch /usr/x");
    expect(r).toMatchObject({ isError: true });
    expect(r.result).toMatch(/touch: cannot touch '\/usr\/x': Read-only file system[\s\S]*exit code 1$/);
    expect(approvalsAsked().length).toBe(before);
  });

  it("a connection to the gateway's own loopback port fails: the sandbox has no network", async (t) => {
    if (unavailable) return t.skip(unavailable);
    const r = await exec(
      "main",
      "agent:main:e2e",
      `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${gw.port}' 2>&1; echo status=$?`,
    );
    expect(r.result).toMatch(/Connection refused|Network is unreachable/);
    expect(r.result).toContain("status=1");
  });

  it("cat /proc/1/cmdline shows the sandbox's init, not the host's", async (t) => {
    if (unavailable) return t.skip(unavailable);
    const r = await exec("main", "agent:main:e2e", "tr '\\0' ' ' < /proc/1/cmdline");
    expect(r.result).toMatch(/^bwrap --args 3 \/bin\/sh -c /);
    expect(r.result).not.toContain(fs.readFileSync("/proc/1/cmdline", "utf8").split("\0")[0] || "-never-");
    // the sandbox's init names no host path (its options went through a pipe)
    expect(r.result).not.toContain(gw.dir);
  });

  it("env shows no provider key, and the names in sandbox.env are passed in", async (t) => {
    if (unavailable) return t.skip(unavailable);
    const r = await exec("main", "agent:main:e2e", "env");
    expect(r.result).toContain("SBX_PASSED=visible-inside");
    expect(r.result).toContain("HOME=/workspace");
    expect(r.result).not.toContain(PROVIDER_KEY);
    expect(r.result).not.toContain("SBX_E2E_KEY");
  });

  it("a file written in the workspace is there afterwards (workspaceAccess rw)", async (t) => {
    if (unavailable) return t.skip(unavailable);
    await exec("main", "agent:main:e2e", "echo written-inside > from-sandbox.txt");
    expect(fs.readFileSync(path.join(mainWorkspace(), "from-sandbox.txt"), "utf8")).toBe("written-inside\n");
    expect((await exec("main", "agent:main:other", "cat from-sandbox.txt")).result).toBe(
      "written-inside\n\nexit code 0",
    );
  });

  it("workspaceAccess ro: exec cannot write, the write tool is refused, a read-only bind is readable", async (t) => {
    if (unavailable) return t.skip(unavailable);
    const r = await exec("reader", "agent:reader:e2e", "echo x > nope.txt");
    expect(r.result).toMatch(/Read-only file system/);
    const w = await toolCall("reader", "agent:reader:e2e", "write", { path: "nope.txt", content: "x" });
    expect(w).toMatchObject({ isError: true });
    expect(w.result).toMatch(
      /read-only in the sandbox \(the workspace is mounted read-only: workspaceAccess is "ro"\)/,
    );
    expect(fs.existsSync(path.join(gw.dir, "state", "workspace-reader", "nope.txt"))).toBe(false);
    expect((await toolCall("reader", "agent:reader:e2e", "read", { path: "/data/ref.txt" })).result).toBe(
      "reference data",
    );
    expect((await exec("reader", "agent:reader:e2e", "touch /data/x")).result).toMatch(/Read-only file system/);
  });

  it("the agent's timeoutSeconds ends a longer command, and memoryMb caps each process's address space", async (t) => {
    if (unavailable) return t.skip(unavailable);
    expect((await exec("reader", "agent:reader:e2e", "ulimit -v")).result).toBe(`${256 * 1024}\n\nexit code 0`);
    const r = await exec("reader", "agent:reader:e2e", "sleep 20; echo never");
    expect(r).toMatchObject({ isError: true });
    expect(r.result).toMatch(/timed out after 1s$/);
  });

  it("a symlink to /etc/passwd planted in the workspace reads the sandbox's view, not the host file", async (t) => {
    if (unavailable) return t.skip(unavailable);
    fs.symlinkSync("/etc/passwd", path.join(mainWorkspace(), "planted"));
    const hostFirstLine = fs.readFileSync("/etc/passwd", "utf8").split("\n")[0];
    const read = await toolCall("main", "agent:main:e2e", "read", { path: "planted" });
    expect(read.result).toMatch(/^sandbox:x:\d+:\d+:Loopgate sandbox:\/workspace:\/bin\/sh/);
    expect(read.result).not.toContain(hostFirstLine);
    const cat = await exec("main", "agent:main:e2e", "cat planted");
    expect(cat.result).toMatch(/^sandbox:x:/);
  });

  it("/reset of a session-scope sandbox starts a fresh one: a file written before is gone (workspaceAccess none)", async (t) => {
    if (unavailable) return t.skip(unavailable);
    const key = "agent:fresh:reset-me";
    expect((await exec("fresh", key, "echo before > kept.txt; echo in-tmp > /tmp/t; ls -A")).result).toBe(
      "kept.txt\n\nexit code 0",
    );
    expect((await exec("fresh", key, "cat kept.txt /tmp/t")).result).toBe("before\nin-tmp\n\nexit code 0");
    expect((await admin.call("sessions.reset", { key })).payload).toMatchObject({ ok: true, key });
    expect((await exec("fresh", key, "ls -A; cat /tmp/t")).result).toMatch(
      /No such file or directory[\s\S]*exit code 1$/,
    );
    expect((await exec("fresh", key, "ls -A")).result).toBe("(no output)\n\nexit code 0");
  });

  it("sessions.list says which sessions are sandboxed and where", async (t) => {
    if (unavailable) return t.skip(unavailable);
    const list = (await writer.call("sessions.list", {})).payload as { sessions: Array<Record<string, unknown>> };
    const row = list.sessions.find((s) => s.key === "agent:main:e2e");
    expect(row?.sandbox).toMatchObject({
      backend: "bubblewrap",
      scope: "session",
      workspaceAccess: "rw",
      network: "none",
      dir: expect.stringContaining(path.join(gw.dir, "state", "sandboxes", "session-main-")),
    });
    // an agent whose sandbox is off: its rows carry none
    await exec("host", "agent:host:listed", "true", async () => {
      const requested = (await operator.next((f) => f.event === "exec.approval.requested", "the approval")).payload!;
      await operator.call("exec.approval.resolve", { id: requested.id, decision: "allow-once" });
    });
    const again = (await writer.call("sessions.list", {})).payload as { sessions: Array<Record<string, unknown>> };
    expect(again.sessions.find((s) => s.key === "agent:host:listed")).not.toHaveProperty("sandbox");
  });

  it("with mode off the same exec waits for approval as today, and the request says why", async (t) => {
    if (unavailable) return t.skip(unavailable);
    const r = await exec("host", "agent:host:e2e", "touch /usr/x-never", async () => {
      const requested = (await operator.next((f) => f.event === "exec.approval.requested", "the approval request"))
        .payload!;
      expect(requested).toMatchObject({
        command: "touch /usr/x-never",
        security: "allowlist",
        sandbox: {
          sandboxed: false,
          reason: 'not sandboxed (agents.list[3].sandbox.mode is "off"): tools.exec.security "allowlist" (the default)',
        },
      });
      const waiting = await writer.seen(
        (f) => f.event === "agent" && (f.payload?.data as { for?: string })?.for === "approval",
        "the waiting event",
      );
      expect(waiting.payload?.data).toMatchObject({ sandbox: { sandboxed: false } });
      await operator.call("exec.approval.resolve", { id: requested.id, decision: "deny" });
    });
    expect(r).toMatchObject({ isError: true, result: "exec denied: an operator denied the command" });
  });
});
