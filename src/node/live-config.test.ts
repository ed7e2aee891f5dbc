import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../config/load.js";
import { silentLogger } from "../infra/logger.js";
import { ScriptedProvider } from "../providers/scripted.js";
import type { ModelProvider, ModelRequest, ModelStreamEvent } from "../providers/types.js";
import { composeNode, type LoopgateNode } from "./compose.js";

/*
 * The live config (SPEC 26) over a real node (SQLite store, runtime, service): what each consumer sees after a new
 * config is applied, what waits for a restart, and that a run already going keeps the config it was prepared with.
 */

const dirs: string[] = [];
const nodes: LoopgateNode[] = [];
afterEach(async () => {
  for (const n of nodes.splice(0)) await n.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-live-"));
  dirs.push(dir);
  return dir;
}

/** Two scripted providers from config (files in `dir`), each answering with its own name. */
function base(dir: string, extra: Record<string, unknown> = {}) {
  for (const id of ["x", "y"]) {
    fs.writeFileSync(
      path.join(dir, `${id}.json5`),
      JSON.stringify({ turns: [{ text: `from ${id}` }], whenDone: "cycle" }),
    );
  }
  const provider = (id: string) => ({ api: "scripted", script: path.join(dir, `${id}.json5`), models: [{ id: "m" }] });
  return {
    agents: { defaults: { model: { primary: "x/m" } } },
    models: { providers: { x: provider("x"), y: provider("y") } },
    tools: { exec: { security: "allowlist", ask: "off", allowlist: ["echo *"] } },
    ...extra,
  };
}

async function node(raw: Record<string, unknown>, providers?: Record<string, ModelProvider>) {
  const n = await composeNode({
    role: "test",
    config: parseConfig(raw),
    stateDir: tempDir(),
    logger: silentLogger,
    ...(providers ? { providers } : {}),
  });
  nodes.push(n);
  return n;
}

function execCheck(n: LoopgateNode, command: string) {
  return n.runtime.execApprovals.check({
    command,
    cwd: "/tmp",
    agentId: "main",
    sessionKey: "agent:main:main",
    runId: "r",
    toolCallId: "t",
    signal: new AbortController().signal,
  });
}

const text = (final: { result: { payloads: Array<{ text?: string }> } }) =>
  final.result.payloads.map((p) => p.text).join("");

describe("LiveConfig.apply", () => {
  it("the next run takes a reloaded config: a new model alias, a changed exec allowlist, a changed provider made again and an unchanged one kept", async () => {
    const dir = tempDir();
    const raw = base(dir);
    const n = await node(raw);
    const refused = await n.service.accept({ message: "hi", model: "quick", idempotencyKey: "a1" }).catch((e) => e);
    expect(String(refused)).toMatch(/unknown model "quick"/);
    expect(await execCheck(n, "date +%Y")).toMatchObject({ allowed: false });
    const x = await n.runtime.getProvider("x");
    const y = await n.runtime.getProvider("y");

    const next = structuredClone(raw) as ReturnType<typeof base>;
    Object.assign(next.agents.defaults, { models: { "x/m": {}, "y/m": { alias: "quick" } } });
    next.tools.exec.allowlist = ["echo *", "date *"];
    next.models.providers.y.models = [{ id: "m" }, { id: "m2" }];
    const change = await n.live.apply(parseConfig(next));

    expect(change.restart).toEqual([]);
    expect(change.applied.sort()).toEqual([
      "agents.defaults.models.x/m",
      "agents.defaults.models.y/m",
      "models.providers.y.models",
      "tools.exec.allowlist",
    ]);
    const accepted = await n.service.accept({ message: "hi", model: "quick", idempotencyKey: "a2" });
    expect(text(await n.service.final(accepted.runId))).toBe("from y");
    expect(await execCheck(n, "date +%Y")).toEqual({ allowed: true });
    expect(await n.runtime.getProvider("x")).toBe(x);
    expect(await n.runtime.getProvider("y")).not.toBe(y);
  });

  it("restart keys keep their running values and are the only ones named: a gateway.port and storage change wait, an alias beside them applies", async () => {
    const dir = tempDir();
    const raw = base(dir);
    const n = await node(raw);
    const port = n.runtime.config.gateway.port;
    const agents = { defaults: { model: { primary: "x/m" }, models: { "y/m": { alias: "quick" } } } };
    const change = await n.live.apply(
      parseConfig({ ...raw, gateway: { port: port + 1 }, storage: { quickCheckOnStart: false }, agents }),
    );
    expect(change.restart.sort()).toEqual(["gateway.port", "storage.quickCheckOnStart"]);
    expect(change.applied).toEqual(["agents.defaults.models.y/m"]);
    expect(n.runtime.config.gateway.port).toBe(port);
    expect(n.runtime.config.storage.quickCheckOnStart).toBe(true);
    expect(n.runtime.config.agents.defaults.models).toEqual({ "y/m": { alias: "quick" } });
    // only restart keys changed: nothing is applied, the consumers are not told
    let told = 0;
    n.live.onApply("a spy", () => told++);
    const only = await n.live.apply(parseConfig({ ...raw, gateway: { port: port + 2 }, agents }));
    expect(only).toMatchObject({ restart: ["gateway.port"], applied: [] });
    expect(told).toBe(0);
  });

  it("spend limits from a reloaded config reach the next run's profile (an embedded node meters its runs)", async () => {
    const dir = tempDir();
    const raw = base(dir);
    const n = await composeNode({
      role: "embedded",
      config: parseConfig(raw),
      stateDir: tempDir(),
      logger: silentLogger,
    });
    nodes.push(n);
    const who = { agentId: "main", sessionKey: "agent:main:main" };
    expect(n.runtime.runLimits(who)?.caps.maxModelCalls).toBeUndefined();
    await n.live.apply(parseConfig({ ...raw, limits: { run: { maxModelCalls: 3 } } }));
    expect(n.runtime.runLimits(who)?.caps.maxModelCalls).toBe(3);
  });

  it("a run already running keeps the config it was prepared with (maxSteps 2, read again when it falls back); the run after the change gets the new one (maxSteps 4)", async () => {
    const calls: Array<{ message: string; model: string }> = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let firstCall!: () => void;
    const started = new Promise<void>((r) => (firstCall = r));
    // model "m" is gone (the run falls back to "fb", starting a new attempt that reads maxSteps again); "fb" always
    // asks for a tool that does not exist, so only maxSteps ends a run
    const scripted = new ScriptedProvider("g", (req) =>
      req.model === "m"
        ? { error: { kind: "model_not_found", message: "no such model" } }
        : { toolCalls: [{ name: "no_such_tool" }] },
    );
    const gated: ModelProvider = {
      id: "g",
      api: "scripted",
      async *stream(req: ModelRequest): AsyncGenerator<ModelStreamEvent> {
        calls.push({ message: String(req.messages.find((m) => m.role === "user")?.content), model: req.model });
        if (calls.length === 1) {
          firstCall();
          await gate;
        }
        yield* scripted.stream(req);
      },
    };
    const agents = (maxSteps: number) => ({
      defaults: { model: { primary: "g/m", fallbacks: ["g/fb"] }, maxSteps },
    });
    const raw = { models: { providers: { g: { api: "scripted", models: [{ id: "m" }, { id: "fb" }] } } } };
    const n = await node({ ...raw, agents: agents(2) }, { g: gated });
    const first = await n.service.accept({ message: "before", idempotencyKey: "b1", sessionKey: "one" });
    await started;
    await n.live.apply(parseConfig({ ...raw, agents: agents(4) }));
    release();
    expect((await n.service.final(first.runId)).stopReason).toBe("max_steps");
    const fallbackCalls = (message: string) => calls.filter((c) => c.message.includes(message) && c.model === "fb");
    expect(fallbackCalls("before")).toHaveLength(2);
    const second = await n.service.accept({ message: "after", idempotencyKey: "b2", sessionKey: "two" });
    expect((await n.service.final(second.runId)).stopReason).toBe("max_steps");
    expect(fallbackCalls("after")).toHaveLength(4);
  });
});
