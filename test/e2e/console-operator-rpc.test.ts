/*
 * The methods behind the console's operator pages (issue 31), over a real gateway and real WebSockets: cron.update
 * and cron.runs, exec.approvals.get/set acting on the next exec call, skills.update acting on the next run's
 * prompt, plugins.setEnabled acting at the next start, and config.schema's help. Scopes are in gateway-scopes.test.ts.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ModelRequest } from "../../src/providers/types.js";
import {
  connectedPeer,
  type TestGateway,
  TestProvider,
  tempStateDir,
  useTestGateways,
} from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();
const YEARLY = "0 0 1 1 *";

describe("cron from the console", () => {
  it("cron.update switches a job off and on, and the switch survives a gateway restart", async () => {
    const stateDir = tempStateDir();
    const first = await gateway({ stateDir });
    const op = await connectedPeer(first.url);
    expect((await op.call("cron.add", { id: "nightly", schedule: "0 3 * * *", message: "go" })).ok).toBe(true);
    const off = await op.call("cron.update", { id: "nightly", patch: { enabled: false } });
    expect(off.payload?.job).toMatchObject({ id: "nightly", enabled: false });
    expect(off.payload?.job).not.toHaveProperty("nextRunAt");
    op.close();
    await first.gw.close("restart");

    const second = await gateway({ stateDir });
    const again = await connectedPeer(second.url);
    const listed = (await again.call("cron.list")).payload?.jobs as Array<Record<string, unknown>>;
    expect(listed).toEqual([expect.objectContaining({ id: "nightly", enabled: false })]);
    // jobId works too (OpenClaw's other name), and a job switched on is due again
    const on = await again.call("cron.update", { jobId: "nightly", patch: { enabled: true } });
    expect(on.payload?.job).toMatchObject({ enabled: true, nextRunAt: expect.any(Number) });
    again.close();
  });

  it("cron.update refuses a config job (naming where to change it) and any patch key besides enabled", async () => {
    const g = await gateway({ config: { cron: { jobs: [{ id: "from-config", schedule: YEARLY, message: "x" }] } } });
    const op = await connectedPeer(g.url);
    const config = await op.call("cron.update", { id: "from-config", patch: { enabled: false } });
    expect(config.error).toMatchObject({ code: "conflict", message: expect.stringContaining("cron.jobs") });
    const other = await op.call("cron.update", { id: "from-config", patch: { schedule: "* * * * *" } });
    expect(other.error).toMatchObject({ code: "invalid_params", message: expect.stringContaining("params.patch") });
    const unknown = await op.call("cron.update", { id: "nobody", patch: { enabled: true } });
    expect(unknown.error).toMatchObject({ code: "not_found", details: { code: "CRON_JOB_NOT_FOUND" } });
    op.close();
  });

  it("cron.runs lists a job's runs, newest first, with how each ended", async () => {
    const g = await gateway();
    const op = await connectedPeer(g.url);
    await op.call("cron.add", { id: "report", schedule: YEARLY, message: "report please" });
    const runIds: string[] = [];
    for (let i = 0; i < 2; i++) {
      const { payload } = await op.call("cron.run", { id: "report" });
      runIds.push(String(payload?.runId));
      await op.call("agent.wait", { runId: payload?.runId, timeoutMs: 10_000 });
    }
    // the end is written when the run's final result is in: read until both are, a bounded number of times
    let entries: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 50; i++) {
      entries = (await op.call("cron.runs", { id: "report" })).payload?.entries as Array<Record<string, unknown>>;
      if (entries.every((e) => e.status === "ok")) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(entries.map((e) => [e.runId, e.status])).toEqual([
      [runIds[1], "ok"],
      [runIds[0], "ok"],
    ]);
    const missing = await op.call("cron.runs", { id: "nobody" });
    expect(missing.error).toMatchObject({ code: "not_found", message: 'params.id: no cron job "nobody"' });
    op.close();
  });
});

/** A gateway whose model runs `command` with exec on its first call, then answers with the tool result it got. */
async function execGateway(command: string): Promise<TestGateway & { workspace: string }> {
  const workspace = tempStateDir();
  const provider = new TestProvider((req, index) => {
    if (index === 0) return { toolCalls: [{ id: "call_1", name: "exec", arguments: { command } }] };
    const tool = [...req.messages].reverse().find((m) => m.role === "toolResult");
    return { before: [`tool said: ${JSON.stringify(tool?.content ?? null)}`] };
  });
  const g = await gateway({ provider, config: { agents: { defaults: { model: { primary: "t/m" }, workspace } } } });
  return { ...g, workspace };
}

describe("the exec policy from the console", () => {
  it("a pattern saved with exec.approvals.set lets a matching command run at once, with no approval asked", async () => {
    const g = await execGateway("echo allowed-by-console");
    const op = await connectedPeer(g.url);
    const before = (await op.call("exec.approvals.get")).payload!;
    expect(before).toMatchObject({ exists: false, file: { allowlist: [] }, config: { security: "allowlist" } });
    const saved = await op.call("exec.approvals.set", {
      file: { allowlist: ["echo *", { pattern: "git status" }] },
      baseHash: before.hash,
    });
    expect(saved.payload).toMatchObject({ exists: true, file: { allowlist: ["echo *", "git status"] } });
    const file = path.join(g.stateDir, "exec-approvals.json");
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);

    const id = op.send("agent", { message: "run it", idempotencyKey: "exec-1", sessionKey: "ops" });
    const final = await op.response(id, 2);
    expect(final.payload).toMatchObject({ status: "ok" });
    expect(JSON.stringify(final.payload)).toContain("allowed-by-console");
    expect(op.all((f) => f.event === "exec.approval.requested")).toEqual([]);
    op.close();
  });

  it("a bad pattern is refused with the config's own message at its place, and a stale baseHash is a conflict", async () => {
    const g = await execGateway("true");
    const op = await connectedPeer(g.url);
    const { hash } = (await op.call("exec.approvals.get")).payload as { hash: string };
    const bad = await op.call("exec.approvals.set", { file: { allowlist: ["git *", { path: "x" }] }, baseHash: hash });
    expect(bad.error).toMatchObject({ code: "invalid_params" });
    expect(bad.error?.message).toContain("params.file.allowlist[1]");
    expect(bad.error?.message).toContain('expected a glob pattern ("git *") or an OpenClaw allowlist entry');
    const blank = await op.call("exec.approvals.set", { file: { allowlist: ["  "] } });
    expect(blank.error?.message).toContain("params.file.allowlist[0]");
    // nothing was written by the refusals
    expect(fs.existsSync(path.join(g.stateDir, "exec-approvals.json"))).toBe(false);
    expect((await op.call("exec.approvals.set", { file: { allowlist: ["ls"] }, baseHash: hash })).ok).toBe(true);
    const stale = await op.call("exec.approvals.set", { file: { allowlist: ["rm *"] }, baseHash: hash });
    expect(stale.error).toMatchObject({ code: "conflict", message: expect.stringContaining("baseHash") });
    expect((await op.call("exec.approvals.get")).payload).toMatchObject({ file: { allowlist: ["ls"] } });
    op.close();
  });
});

describe("skills and plugins from the console", () => {
  it("a skill switched off with skills.update is gone from the next run's prompt, and back when switched on", async () => {
    const skills = tempStateDir();
    fs.mkdirSync(path.join(skills, "weather"));
    fs.writeFileSync(
      path.join(skills, "weather", "SKILL.md"),
      "---\nname: weather\ndescription: Tells the weather for a city\n---\nUse curl.\n",
    );
    const prompts: string[] = [];
    const provider = new TestProvider((req: ModelRequest) => {
      prompts.push(req.system ?? "");
      return { before: ["ok"] };
    });
    const g = await gateway({ provider, config: { skills: { dirs: [skills] } } });
    const op = await connectedPeer(g.url);
    const status = (await op.call("skills.status", {})).payload!;
    expect(status.skills).toEqual([expect.objectContaining({ name: "weather", enabled: true, missingEnv: [] })]);
    const ask = async (n: number) =>
      op.response(op.send("agent", { message: "hi", idempotencyKey: `s-${n}`, sessionKey: "skills" }), 2);
    await ask(1);
    expect(prompts.at(-1)).toContain("Tells the weather for a city");
    const off = await op.call("skills.update", { skillKey: "weather", enabled: false });
    expect(off.payload).toEqual({ ok: true, enabled: false, appliesAt: "next run" });
    await ask(2);
    expect(prompts.at(-1)).not.toContain("Tells the weather for a city");
    expect((await op.call("skills.status", {})).payload?.skills).toEqual([
      expect.objectContaining({ name: "weather", enabled: false }),
    ]);
    await op.call("skills.update", { skillKey: "weather", enabled: true });
    await ask(3);
    expect(prompts.at(-1)).toContain("Tells the weather for a city");
    const unknown = await op.call("skills.update", { skillKey: "nope", enabled: false });
    expect(unknown.error).toMatchObject({ code: "not_found", message: expect.stringContaining("params.skillKey") });
    op.close();
  });

  it("a plugin switched off with plugins.setEnabled still runs now and is not loaded at the next start", async () => {
    const stateDir = tempStateDir();
    const dir = path.join(stateDir, "plugins", "greeter");
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "index.js"), "export function register(api) { api.logger.info('greeter up'); }\n");
    const first = await gateway({ stateDir });
    const op = await connectedPeer(first.url);
    expect((await op.call("plugins.list")).payload?.plugins).toEqual([{ id: "greeter", loaded: true, enabled: true }]);
    const off = await op.call("plugins.setEnabled", { pluginId: "greeter", enabled: false });
    expect(off.payload).toEqual({ ok: true, enabled: false, appliesAt: "next start" });
    expect((await op.call("plugins.list")).payload?.plugins).toEqual([{ id: "greeter", loaded: true, enabled: false }]);
    const unknown = await op.call("plugins.setEnabled", { pluginId: "nope", enabled: true });
    expect(unknown.error).toMatchObject({ code: "not_found", message: expect.stringContaining("params.pluginId") });
    op.close();
    await first.gw.close("restart");

    const second = await gateway({ stateDir });
    const again = await connectedPeer(second.url);
    expect((await again.call("plugins.list")).payload?.plugins).toEqual([
      { id: "greeter", loaded: false, enabled: false },
    ]);
    again.close();
  });
});

describe("config.schema", () => {
  it("gives the config's JSON Schema and each described key's help by the path config.get's values have", async () => {
    const g = await gateway();
    const op = await connectedPeer(g.url);
    const res = (await op.call("config.schema")).payload as {
      schema: Record<string, unknown>;
      help: Record<string, string>;
    };
    expect(res.schema).toMatchObject({
      type: "object",
      properties: expect.objectContaining({ gateway: expect.any(Object) }),
    });
    expect(res.help["gateway.port"]).toContain("port");
    expect(res.help["tools.exec.allowlist"]).toContain("glob");
    // and config.get has a value at each such path (the page pairs them)
    const config = (await op.call("config.get")).payload?.config as { gateway: { port: number } };
    expect(typeof config.gateway.port).toBe("number");
    op.close();
  });
});
