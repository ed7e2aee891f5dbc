/*
 * Plugin hooks, internal hooks and skills as a user meets them: fixture plugins (plain .mjs files listed in
 * plugins.load.paths) and hook folders (copied into <workspace>/hooks) loaded by a real AgentRuntime, turns sent
 * through the AgentService, a real SQLite store in a temp state dir, and scripted models that record every request
 * they get. The fixtures live in test/fixtures/integration/ and write what they saw into one globalThis array.
 */
import { randomUUID } from "node:crypto";
import { cp, mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseConfig } from "../config/index.js";
import { type Clock, systemClock } from "../infra/clock.js";
import { createLogger } from "../infra/logger.js";
import { sqliteRuntime } from "../node/compose.js";
import type { SkillSnapshot } from "../prompt/skills.js";
import { ScriptedProvider, type ScriptedTurn } from "../providers/scripted.js";
import { type ChatMessage, contentText, type ModelRequest } from "../providers/types.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { openStore, type SqliteStore } from "../storage/sqlite-store.js";
import type { Tool } from "../tools/types.js";
import type { AgentRuntime } from "./runtime.js";
import { type AgentFinal, AgentService } from "./service.js";

const fixtures = fileURLToPath(new URL("../../test/fixtures/integration/", import.meta.url));
const SESSION = "agent:main:main";

/** One entry per fixture call; see test/fixtures/integration/record.mjs. */
interface LogEntry {
  hook: string;
  plugin?: string;
  withMessages?: boolean;
  toolName?: string;
  sessionKey?: string;
}

function hookLog(): LogEntry[] {
  const g = globalThis as { __loopgateIntegrationLog?: LogEntry[] };
  g.__loopgateIntegrationLog ??= [];
  return g.__loopgateIntegrationLog;
}

/** What a scripted model was asked: a copy, since the loop keeps appending to the live message array. */
interface SeenRequest {
  model: string;
  system?: string;
  messages: ChatMessage[];
  /** names of the tools the model was offered */
  tools: string[];
}

type ModelScript = ScriptedTurn[] | ((request: ModelRequest, index: number) => ScriptedTurn);

interface Harness {
  rt: AgentRuntime;
  service: AgentService;
  /** the SQLite engine under the runtime's store, for reading what a turn wrote */
  store: SqliteStore;
  workspace: string;
  /** every line the runtime logged (info and up) */
  logs: string[];
  providers: Record<string, ScriptedProvider>;
  requests: Record<string, SeenRequest[]>;
  /** arguments of every call the `probe` tool actually executed */
  probeCalls: Record<string, unknown>[];
}

let cleanup: Array<() => Promise<void> | void> = [];

beforeEach(() => {
  hookLog().length = 0;
});

afterEach(async () => {
  for (const fn of cleanup.reverse()) await fn();
  cleanup = [];
});

/**
 * A state dir with a non-empty workspace (so no starter files), the named fixture plugins and hook folders, and one
 * scripted provider per entry of `models` (the first is the configured model). A scripted turn list repeats its last
 * turn when it runs out.
 */
async function setup(
  opts: { plugins?: string[]; hooks?: string[]; models?: Record<string, ModelScript> } = {},
): Promise<Harness> {
  const stateDir = await realpath(await mkdtemp(path.join(tmpdir(), "loopgate-hooks-it-")));
  cleanup.push(() => rm(stateDir, { recursive: true, force: true }));
  const workspace = path.join(stateDir, "workspace");
  await mkdir(workspace, { recursive: true });
  await writeFile(path.join(workspace, "AGENTS.md"), "# Rules\nAnswer briefly.\n");
  for (const hook of opts.hooks ?? []) {
    await cp(path.join(fixtures, "hooks", hook), path.join(workspace, "hooks", hook), { recursive: true });
  }

  const models = opts.models ?? { alpha: [{ text: "Hello from alpha." }] };
  const providers: Record<string, ScriptedProvider> = {};
  const requests: Record<string, SeenRequest[]> = {};
  for (const [id, script] of Object.entries(models)) {
    const seen: SeenRequest[] = [];
    requests[id] = seen;
    providers[id] = new ScriptedProvider(id, (request, index) => {
      seen.push({
        model: request.model,
        system: request.system,
        messages: structuredClone(request.messages),
        tools: request.tools.map((t) => t.name),
      });
      if (typeof script === "function") return script(request, index);
      return script[Math.min(index, script.length - 1)];
    });
  }
  const primary = Object.keys(models)[0];

  const config = parseConfig({
    agents: { defaults: { model: { primary: `${primary}/${primary}-model` }, workspace } },
    plugins: { load: { paths: (opts.plugins ?? []).map((p) => path.join(fixtures, "plugins", `${p}.mjs`)) } },
  });
  const store = openStore(stateDir);
  cleanup.push(() => store.close());
  const logs: string[] = [];
  // Strictly increasing, so a snapshot taken again is told apart from a reused one even within one millisecond.
  let tick = 0;
  const clock: Clock = { ...systemClock, now: () => Date.now() + ++tick };
  const probeCalls: Record<string, unknown>[] = [];
  const probe: Tool = {
    name: "probe",
    description: "Checks something and says so.",
    parameters: { type: "object", properties: { n: { type: "number" } } },
    concurrency: "parallel",
    async execute(args) {
      probeCalls.push(args);
      return { content: "probe ran" };
    },
  };
  const rt = sqliteRuntime({
    config,
    stateDir,
    store: new SqliteStoreAdapter(store),
    clock,
    logger: createLogger({ level: "info", write: (line) => logs.push(line) }),
    providers,
    tools: [probe],
  });
  return { rt, service: new AgentService(rt), store, workspace, logs, providers, requests, probeCalls };
}

async function turn(h: Harness, message: string): Promise<AgentFinal> {
  const { runId } = await h.service.accept({ message, idempotencyKey: randomUUID() });
  return h.service.final(runId);
}

function replyText(final: AgentFinal): string {
  return final.result.payloads.map((p) => p.text).join("\n");
}

function transcriptMessages(h: Harness, generation?: number): ChatMessage[] {
  return h.store
    .readTranscript(SESSION, { generation, kinds: ["message"] })
    .flatMap((r) => (r.message ? [r.message] : []));
}

function lastUser(req: SeenRequest): string {
  const users = req.messages.filter((m) => m.role === "user");
  const last = users[users.length - 1];
  return last ? contentText(last.content) : "";
}

const PROBE_THEN_ECHO: ScriptedTurn[] = [
  { toolCalls: [{ name: "probe", arguments: { n: 1 } }] },
  { text: "tool said: {{lastToolResult}}" },
];

describe("plugin hooks in one turn", () => {
  it("fires every hook once, in order, during a turn with one tool call", async () => {
    const h = await setup({ plugins: ["recorder"], models: { alpha: PROBE_THEN_ECHO } });
    const final = await turn(h, "run the probe");

    expect(final.status).toBe("ok");
    expect(replyText(final)).toBe("tool said: probe ran");
    expect(h.probeCalls).toHaveLength(1);

    const hooks = hookLog().map((e) => e.hook);
    const once = [
      "session_start",
      "message_received",
      "before_model_resolve",
      "before_prompt_build",
      "before_agent_reply",
      "before_tool_call",
      "after_tool_call",
      "tool_result_persist",
      "message_sending",
      "message_sent",
      "agent_end",
    ];
    for (const name of once)
      expect(
        hooks.filter((x) => x === name),
        name,
      ).toHaveLength(1);

    const at = (name: string) => hooks.indexOf(name);
    const chain = [
      "before_model_resolve",
      "before_prompt_build",
      "before_agent_reply",
      "before_tool_call",
      "after_tool_call",
      "tool_result_persist",
      "message_sending",
      "message_sent",
    ];
    for (let i = 1; i < chain.length; i++) {
      expect(at(chain[i - 1]), `${chain[i - 1]} before ${chain[i]}`).toBeLessThan(at(chain[i]));
    }
    expect(at("session_start")).toBeLessThan(at("before_model_resolve"));
    expect(at("message_received")).toBeLessThan(at("before_model_resolve"));
    expect(at("tool_result_persist")).toBeLessThan(at("agent_end"));

    // The legacy hook may run in either phase (SPEC 6), at most once in each: without messages while the model
    // is resolved, with them while the prompt is built, and never once the model has been asked.
    const legacy = hookLog()
      .map((e, i) => ({ ...e, i }))
      .filter((e) => e.hook === "before_agent_start");
    expect(legacy.length).toBeGreaterThanOrEqual(1);
    expect(legacy.filter((e) => e.withMessages).length).toBeLessThanOrEqual(1);
    expect(legacy.filter((e) => !e.withMessages).length).toBeLessThanOrEqual(1);
    for (const e of legacy) {
      expect(e.i).toBeLessThan(at("before_agent_reply"));
      if (e.withMessages) expect(e.i).toBeGreaterThan(at("before_model_resolve"));
      else expect(e.i).toBeLessThan(at("before_prompt_build"));
    }
  });

  it("fires session_start on a session's first turn only, and again after /new ended it", async () => {
    const h = await setup({ plugins: ["recorder"] });
    const boundaries = () => hookLog().filter((e) => e.hook === "session_start" || e.hook === "session_end");
    await turn(h, "first");
    await turn(h, "second");
    expect(boundaries().map((e) => e.hook)).toEqual(["session_start"]);
    expect(hookLog().filter((e) => e.hook === "message_received")).toHaveLength(2);

    await turn(h, "/new");
    await turn(h, "first of the new session");
    await turn(h, "second of the new session");
    expect(boundaries().map((e) => e.hook)).toEqual(["session_start", "session_end", "session_start"]);
  });
});

describe("plugin hook decisions", () => {
  it("a high-priority before_tool_call block keeps the tool from running and lower priorities are not asked", async () => {
    // The low-priority plugin is loaded first: priority, not load order, decides who is asked first.
    const h = await setup({ plugins: ["tool-audit-low", "tool-block-high"], models: { alpha: PROBE_THEN_ECHO } });
    const final = await turn(h, "run the probe");

    expect(final.status).toBe("ok");
    expect(h.probeCalls).toHaveLength(0);
    expect(hookLog().filter((e) => e.plugin === "tool-audit-low")).toHaveLength(0);
    const result = transcriptMessages(h).find((m) => m.role === "toolResult");
    expect(result).toMatchObject({ toolName: "probe", isError: true, content: "blocked: probe is off limits" });
    expect(replyText(final)).toBe("tool said: blocked: probe is off limits");
  });

  it("a higher-priority {block:false} does not clear a lower handler's block", async () => {
    const h = await setup({ plugins: ["tool-allow-high", "tool-block-low"], models: { alpha: PROBE_THEN_ECHO } });
    await turn(h, "run the probe");

    expect(hookLog().filter((e) => e.plugin === "tool-allow-high")).toHaveLength(1);
    expect(h.probeCalls).toHaveLength(0);
    const result = transcriptMessages(h).find((m) => m.role === "toolResult");
    expect(result).toMatchObject({ isError: true, content: "blocked: stopped by the low-priority guard" });
  });

  it("a before_model_resolve override sends the turn to the other provider and model", async () => {
    const h = await setup({
      plugins: ["model-switch"],
      models: { alpha: [{ text: "alpha answered" }], beta: [{ text: "beta answered" }] },
    });
    const final = await turn(h, "who answers?");

    expect(replyText(final)).toBe("beta answered");
    expect(h.providers.alpha.callCount).toBe(0);
    expect(h.providers.beta.callCount).toBe(1);
    expect(h.requests.beta[0].model).toBe("beta-large");
    expect(final.result.meta.model).toBe("beta/beta-large");
  });

  it("before_prompt_build replaces the system prompt and prepends context the transcript does not keep", async () => {
    const h = await setup({ plugins: ["prompt-rewrite"] });
    await turn(h, "what is the status?");

    const [req] = h.requests.alpha;
    expect(req.system).toBe("You are the replacement prompt from prompt-rewrite.");
    expect(lastUser(req)).toBe("[context from prompt-rewrite: ticket #4711]\n\nwhat is the status?");
    const stored = transcriptMessages(h).filter((m) => m.role === "user");
    expect(stored).toEqual([{ role: "user", content: "what is the status?" }]);
  });

  it("before_agent_reply {handled:true, reply} answers the turn without calling the model", async () => {
    const h = await setup({ plugins: ["reply-claim"] });
    const final = await turn(h, "hello?");

    expect(final.status).toBe("ok");
    expect(replyText(final)).toBe("Handled by reply-claim.");
    expect(h.providers.alpha.callCount).toBe(0);
    const assistant = transcriptMessages(h).filter((m) => m.role === "assistant");
    expect(assistant).toHaveLength(1);
    expect(assistant[0]).toMatchObject({ content: [{ type: "text", text: "Handled by reply-claim." }] });
  });

  it("before_agent_reply {handled:true} without a reply ends the turn silently", async () => {
    const h = await setup({ plugins: ["reply-silence"] });
    const final = await turn(h, "hello?");

    expect(final.status).toBe("ok");
    expect(final.result.payloads).toEqual([]);
    expect(h.providers.alpha.callCount).toBe(0);
    expect(transcriptMessages(h).filter((m) => m.role === "assistant")).toHaveLength(0);
  });

  it("tool_result_persist replaces the stored tool result while the model saw the real one", async () => {
    const h = await setup({ plugins: ["persist-redact"], models: { alpha: PROBE_THEN_ECHO } });
    const final = await turn(h, "run the probe");

    expect(replyText(final)).toBe("tool said: probe ran");
    const rows = h.store.readTranscript(SESSION, { kinds: ["message"] });
    const toolRow = (await rows).find((r) => r.message?.role === "toolResult");
    expect(toolRow?.message).toMatchObject({ toolName: "probe", content: "[redacted by persist-redact: probe]" });
  });

  it("message_sending {cancel:true} removes the outgoing reply", async () => {
    const h = await setup({ plugins: ["send-cancel"] });
    const final = await turn(h, "hello?");

    expect(final.status).toBe("ok");
    expect(h.providers.alpha.callCount).toBe(1);
    expect(final.result.payloads).toEqual([]);
  });

  it("message_sending content rewrites the outgoing reply", async () => {
    const h = await setup({ plugins: ["send-rewrite"] });
    const final = await turn(h, "hello?");

    expect(replyText(final)).toBe("Hello from alpha. [checked by send-rewrite]");
  });

  it("a modifying hook that never answers is skipped after its timeoutMs and the turn completes", async () => {
    const h = await setup({ plugins: ["stuck-prompt-hook"] });
    const final = await turn(h, "hello?");

    expect(final.status).toBe("ok");
    expect(replyText(final)).toBe("Hello from alpha.");
    // The handler after the stuck one still ran.
    expect(h.requests.alpha[0].system).toContain("Appended after the stuck hook was skipped.");
    expect(h.logs.join("\n")).toContain('plugin "stuck-prompt-hook" hook before_prompt_build timed out after 50ms');
  });
});

describe("internal hooks", () => {
  it("an agent:bootstrap hook in <workspace>/hooks adds a file that reaches the system prompt", async () => {
    const h = await setup({ hooks: ["extra-bootstrap"] });
    await turn(h, "hello?");

    const system = h.requests.alpha[0].system ?? "";
    expect(system).toContain("## AGENTS.md");
    expect(system).toContain("## TEAM.md\nTeam rule from the extra-bootstrap hook: LG-BOOTSTRAP-HOOK-5d1c.");
  });

  it("/new and /reset fire their command hooks and start a new transcript generation, keeping the old rows", async () => {
    const h = await setup({ hooks: ["command-log"] });
    await turn(h, "my colour is blue");
    const first = (await h.store.getSession(SESSION))?.generation ?? -1;
    const before = transcriptMessages(h);
    expect(before).toHaveLength(2);

    const started = await turn(h, "/new");
    expect(replyText(started)).toBe("Started a new session.");
    expect((await h.store.getSession(SESSION))?.generation).toBe(first + 1);
    expect(transcriptMessages(h)).toEqual([]);
    expect(transcriptMessages(h, first)).toEqual(before);
    expect((await h.store.readTranscript(SESSION, { generation: first })).at(-1)).toMatchObject({ kind: "reset" });

    await turn(h, "what is my colour?");
    // The model starts over: only the new message, not the old generation.
    expect(h.requests.alpha.at(-1)?.messages).toEqual([{ role: "user", content: "what is my colour?" }]);

    await turn(h, "/reset");
    expect((await h.store.getSession(SESSION))?.generation).toBe(first + 2);
    expect(transcriptMessages(h, first + 1)).toHaveLength(2);
    expect(transcriptMessages(h, first)).toEqual(before);

    expect(hookLog().map((e) => e.hook)).toEqual(["command:new", "command:reset"]);
    expect(hookLog().every((e) => e.sessionKey === SESSION)).toBe(true);
  });

  it("/stop during a slow turn aborts it, fires command:stop and replies Stopped.", async () => {
    let modelCalled!: () => void;
    const called = new Promise<void>((resolve) => {
      modelCalled = resolve;
    });
    const h = await setup({
      hooks: ["command-log"],
      models: {
        alpha: () => {
          modelCalled();
          return { delayMs: 60_000, text: "an answer that comes too late" };
        },
      },
    });
    const slow = h.service.accept({ message: "write a very long essay", idempotencyKey: randomUUID() });
    await called;
    const stop = h.service.accept({ message: "/stop", idempotencyKey: randomUUID() });

    const slowFinal = await h.service.final((await slow).runId);
    const stopFinal = await h.service.final((await stop).runId);
    expect(slowFinal.summary).toBe("aborted");
    expect((await h.store.getRun((await slow).runId))?.status).toBe("aborted");
    expect(replyText(stopFinal)).toBe("Stopped.");
    expect(hookLog().map((e) => e.hook)).toEqual(["command:stop"]);
    // the late answer is never stored: the aborted run's only assistant row is its marker (issue 31: a run that
    // ended badly leaves a trace), with no content
    expect(transcriptMessages(h).filter((m) => m.role === "assistant")).toEqual([
      expect.objectContaining({ content: [], stopReason: "aborted", errorKind: "aborted" }),
    ]);
  });

  it("a throwing internal hook is logged with its name and the turn still completes", async () => {
    const h = await setup({ hooks: ["broken-greeter"] });
    const final = await turn(h, "hello?");

    expect(final.status).toBe("ok");
    expect(replyText(final)).toBe("Hello from alpha.");
    expect(h.logs.join("\n")).toContain('internal hook "broken-greeter" failed on message:received: greeter exploded');
  });
});

describe("workspace skills", () => {
  async function writeSkill(workspace: string, folder: string, text: string): Promise<string> {
    const dir = path.join(workspace, "skills", folder);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "SKILL.md"), text);
    return path.join(dir, "SKILL.md");
  }

  function snapshot(h: Harness): SkillSnapshot {
    return JSON.parse(h.store.getSession(SESSION)?.skillsSnapshot ?? "null") as SkillSnapshot;
  }

  it("lists a workspace skill in the system prompt and reuses the session's snapshot until a skill is added", async () => {
    const h = await setup();
    const weather = await writeSkill(
      h.workspace,
      "weather",
      "---\nname: weather\ndescription: Looks up the forecast.\n---\nUse the forecast API.\n",
    );

    await turn(h, "first");
    expect(h.requests.alpha[0].system).toContain(`- weather: Looks up the forecast. (${weather})`);
    const first = snapshot(h);
    expect(first.skills.map((s) => s.name)).toEqual(["weather"]);

    await turn(h, "second, nothing changed");
    expect(snapshot(h).takenAt).toBe(first.takenAt);
    expect(snapshot(h).fingerprint).toBe(first.fingerprint);

    // Adding a folder changes the fingerprint, so the next turn takes a new snapshot and sees the new skill.
    await writeSkill(h.workspace, "calendar", "---\nname: calendar\ndescription: Reads the calendar.\n---\n");
    await turn(h, "third, after adding a skill");
    expect(h.requests.alpha[2].system).toContain("- calendar: Reads the calendar.");
    expect(h.requests.alpha[2].system).toContain("- weather: Looks up the forecast.");
    expect(snapshot(h).takenAt).toBeGreaterThan(first.takenAt);
  });

  it("warns about a SKILL.md with bad front matter, naming the file, and still runs the turn", async () => {
    const h = await setup();
    const broken = await writeSkill(h.workspace, "broken", "---\nname: broken\ndescription: [never closed\n---\n");
    await writeSkill(h.workspace, "weather", "---\nname: weather\ndescription: Looks up the forecast.\n---\n");

    const final = await turn(h, "hello?");
    expect(final.status).toBe("ok");
    expect(replyText(final)).toBe("Hello from alpha.");
    const warning = h.logs.find((line) => line.includes(broken));
    expect(warning).toMatch(/warn/);
    expect(h.requests.alpha[0].system).toContain("- weather:");
    expect(h.requests.alpha[0].system).not.toContain("- broken:");
  });
});

describe("plugin tools", () => {
  it('a plugin tool named "web search" or "read" is refused at load with the reason logged, and turns still run', async () => {
    const h = await setup({ plugins: ["web-search-tool", "read-clash", "lookup-tool"] });
    const final = await turn(h, "hi");

    expect(final.status).toBe("ok");
    expect(h.logs.filter((l) => l.includes("failed to load"))).toEqual([
      expect.stringContaining(
        'web-search-tool.mjs failed to load: tool name "web search" from plugin "web-search-tool" is invalid: use 1-64 letters, digits, "_" or "-"',
      ),
      expect.stringContaining(
        'read-clash.mjs failed to load: tool "read" from plugin "read-clash" clashes with the built-in tool "read"',
      ),
    ]);
    expect(h.requests.alpha[0].tools).toEqual(["read", "write", "edit", "exec", "message", "probe", "lookup"]);
  });

  it("a plugin tool's call that its JSON Schema refuses never reaches the plugin; the model reads why", async () => {
    const h = await setup({
      plugins: ["lookup-tool"],
      models: {
        alpha: [{ toolCalls: [{ name: "lookup", arguments: { word: 7 } }] }, { text: "tool said: {{lastToolResult}}" }],
      },
    });
    const final = await turn(h, "look it up");

    expect(replyText(final)).toBe("tool said: invalid arguments for lookup: word: expected string, got number");
    expect(hookLog().filter((e) => e.hook === "lookup.execute")).toEqual([]);
  });
});
