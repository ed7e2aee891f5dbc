/*
 * The CLI as a user runs it: real `node dist/cli/main.js` child processes (run `npm run build` first), a temp state
 * directory (LOOPGATE_STATE_DIR, and HOME too) and a temp JSON5 config passed with --config, so nothing here reads
 * or writes the developer's own ~/.loopgate. The model is the scripted provider playing fixtures in
 * test/fixtures/cli/.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { openBackend } from "../../src/node/backend.js";
import { createTestSchema, testPostgresUrl } from "../../src/testing/postgres-schema.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const cli = path.join(root, "dist", "cli", "main.js");
const fixtures = path.join(root, "test", "fixtures", "cli");
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { version: string };

interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

beforeAll(() => {
  if (!fs.existsSync(cli)) {
    throw new Error(`${cli} is missing: run \`npm run build\` before the CLI end-to-end tests`);
  }
});

const sandboxes: string[] = [];
afterAll(() => {
  for (const dir of sandboxes) fs.rmSync(dir, { recursive: true, force: true });
});

// Guards, not timing assertions: this file runs ~19 CLI processes at once, and inside the full suite on a 2-core
// machine one `agent --local` can take several seconds of wall time (the same test alone takes ~1 s), so the
// defaults (20 s per test, 15 s per child) killed healthy children and failed runs whose output was right.
const TEST_TIMEOUT_MS = 90_000;
const CHILD_KILL_MS = 60_000;

/**
 * One test's world: its own temp dir holding the state dir, HOME and config files, so tests can run concurrently.
 * `loopgate(args)` runs the CLI there; `onStdout` sees stdout as it arrives (with the child, to signal it). A child
 * that hangs is killed after 15 s so a broken build fails the test instead of stalling the suite.
 */
function sandbox() {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-cli-")));
  sandboxes.push(tmp);
  const stateDir = path.join(tmp, "state");

  // no API keys or config of the developer's; state and home in the temp dir
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(LOOPGATE_|OPENCLAW_|OPENAI_|ANTHROPIC_)/.test(k)) env[k] = v;
  }
  Object.assign(env, { LOOPGATE_STATE_DIR: stateDir, HOME: tmp, NO_COLOR: "1" });

  const loopgate = (
    args: string[],
    onStdout?: (soFar: string, child: ReturnType<typeof spawn>) => void,
    extraEnv: NodeJS.ProcessEnv = {},
  ): Promise<CliResult> =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [cli, ...args], {
        cwd: tmp,
        env: { ...env, ...extraEnv },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        stdout += chunk;
        onStdout?.(stdout, child);
      });
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        stderr += chunk;
      });
      const guard = setTimeout(() => child.kill("SIGKILL"), CHILD_KILL_MS);
      child.on("error", reject);
      child.on("close", (code, signal) => {
        clearTimeout(guard);
        resolve({ code, signal, stdout, stderr });
      });
    });

  /**
   * Writes a config whose model is the scripted provider playing `script` (a fixture name), with `extra` top-level
   * keys; returns its path.
   */
  const configFor = (script: string, extra: Record<string, unknown> = {}): string => {
    const file = path.join(tmp, `config-${path.basename(script, ".json5")}.json5`);
    const config = {
      agents: { defaults: { model: { primary: "script/fake-model" } } },
      models: {
        providers: { script: { api: "scripted", script: path.join(fixtures, script), models: [{ id: "fake-model" }] } },
      },
      // exec's child gets only PATH, HOME, LANG, TERM and the names listed here (a script waits for a file there)
      tools: { exec: { env: ["LOOPGATE_STATE_DIR"] } },
      ...extra,
    };
    fs.writeFileSync(file, `// written by cli-local.test.ts\n${JSON.stringify(config, null, 2)}\n`);
    return file;
  };

  return { loopgate, configFor, stateDir };
}

interface JsonLine {
  type: "event" | "result";
  runId: string;
  seq?: number;
  stream?: string;
  data?: Record<string, unknown>;
  status?: string;
  summary?: string;
  stopReason?: string;
  error?: string;
}

function jsonLines(stdout: string): JsonLine[] {
  return stdout
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as JsonLine);
}

const noStackTrace = (stderr: string) => expect(stderr, "no stack trace for the user").not.toMatch(/^\s{4}at /m);

describe.concurrent("loopgate basics", { timeout: TEST_TIMEOUT_MS }, () => {
  it("--version prints the package version and exits 0", async () => {
    const { loopgate } = sandbox();
    const r = await loopgate(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it("-V and -v work like --version", async () => {
    const { loopgate } = sandbox();
    for (const flag of ["-V", "-v"]) {
      const r = await loopgate([flag]);
      expect(r.code, flag).toBe(0);
      expect(r.stdout.trim(), flag).toBe(pkg.version);
    }
  });

  it("--help lists the commands and exits 0", async () => {
    const { loopgate } = sandbox();
    const r = await loopgate(["--help"]);
    expect(r.code).toBe(0);
    for (const command of ["agent", "sessions", "demo", "health"]) expect(r.stdout).toContain(command);
  });

  it("agent-alone-parses-like-the-whole-program: `loopgate agent` (parsed with the agent command alone) helps and refuses exactly as `loopgate help agent` and the whole program do", async () => {
    const { loopgate } = sandbox();
    const alone = await loopgate(["agent", "--help"]);
    const whole = await loopgate(["help", "agent"]);
    expect(alone.code).toBe(0);
    expect(alone.stdout).toContain("--message <text>");
    expect(alone.stdout).toBe(whole.stdout);
    const bogus = await loopgate(["agent", "--bogus"]);
    expect(bogus.code).toBe(2);
    expect(bogus.stderr).toBe("error: unknown option '--bogus'\n(see loopgate agent --help)\n");
  });

  it("demo runs offline: exits 0, shows the tool line and streams the reply", async () => {
    const { loopgate } = sandbox();
    const r = await loopgate(["demo"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/⚙ exec ls -1 → ok/);
    expect(r.stdout).toContain("Let me look at the workspace first.");
    expect(r.stdout).toContain("Here is what the workspace holds:");
    expect(r.stdout).toContain("AGENTS.md"); // the real tool ran in a real workspace
    noStackTrace(r.stderr);
  });
});

describe.concurrent("loopgate agent --local", { timeout: TEST_TIMEOUT_MS }, () => {
  it("runs a turn with the configured model and streams the reply to stdout", async () => {
    const { loopgate, configFor } = sandbox();
    const r = await loopgate(["agent", "--local", "--message", "hi", "--config", configFor("hello.script.json5")]);
    expect(r.stderr).toMatch(/— ok/);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("Hello, hi!\n");
  });

  it("--json prints one event per line, seq 1..N, lifecycle start → tool → assistant → lifecycle end", async () => {
    const { loopgate, configFor } = sandbox();
    const r = await loopgate([
      "agent",
      "--local",
      "--message",
      "run echo",
      "--json",
      "--config",
      configFor("tool.script.json5"),
    ]);
    expect(r.code).toBe(0);
    const lines = jsonLines(r.stdout);
    const result = lines.at(-1);
    expect(result).toMatchObject({ type: "result", status: "ok", summary: "completed" });

    const events = lines.filter((l) => l.type === "event");
    expect(new Set(events.map((e) => e.runId))).toEqual(new Set([result?.runId]));
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));

    // The shape of the run, from its lifecycle, tool and assistant events (other streams, such as the queue receipt,
    // may interleave); consecutive assistant deltas and a tool's partial updates collapse into one step.
    const shape: string[] = [];
    for (const e of events) {
      if (e.stream !== "lifecycle" && e.stream !== "tool" && e.stream !== "assistant") continue;
      if (e.stream === "tool" && e.data?.phase === "update") {
        expect(shape.at(-1), "a tool update comes between its start and its result").toBe("tool:start");
        continue;
      }
      const label = e.stream === "assistant" ? "assistant" : `${e.stream}:${e.data?.phase}`;
      if (shape.at(-1) !== label) shape.push(label);
    }
    expect(shape).toEqual(["lifecycle:start", "tool:start", "tool:result", "assistant", "lifecycle:end"]);

    const toolStart = events.find((e) => e.stream === "tool" && e.data?.phase === "start");
    expect(toolStart?.data).toMatchObject({
      name: "exec",
      toolCallId: "call_echo",
      args: { command: "echo tool-ran" },
    });
    const toolResult = events.find((e) => e.stream === "tool" && e.data?.phase === "result");
    expect(toolResult?.data).toMatchObject({ toolCallId: "call_echo", isError: false });
    // the answer is the deltas joined (`text` is only a checkpoint now and then: protocol/agent-events.ts)
    const answer = events
      .filter((e) => e.stream === "assistant")
      .map((e) => e.data?.delta)
      .join("");
    expect(answer).toMatch(/^The tool said: tool-ran/);
  });

  it("a bad config file: every problem with its key path on stderr, exit 2, no stack trace", async () => {
    const { loopgate } = sandbox();
    const r = await loopgate([
      "agent",
      "--local",
      "--message",
      "hi",
      "--config",
      path.join(fixtures, "bad-config.json5"),
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(path.join(fixtures, "bad-config.json5"));
    expect(r.stderr).toContain("models.providers.local.baseUrl: expected a URL");
    expect(r.stderr).toMatch(/agents\.defaults\.timeoutSeconds: .*expected number/);
    expect(r.stderr).toContain("agents.defaults.maxStep: unknown key");
    expect(r.stdout).toBe("");
    noStackTrace(r.stderr);
  });

  it("without --message it explains what is missing and exits 2", async () => {
    const { loopgate, configFor } = sandbox();
    const r = await loopgate(["agent", "--local", "--config", configFor("hello.script.json5")]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--message is required");
    noStackTrace(r.stderr);
  });

  it("--timeout 1 against a model that takes 5 s: exit 124 and a lifecycle error saying it timed out", async () => {
    const { loopgate, configFor } = sandbox();
    const r = await loopgate([
      "agent",
      "--local",
      "--message",
      "hi",
      "--timeout",
      "1",
      "--json",
      "--config",
      configFor("slow-start.script.json5"),
    ]);
    expect(r.code).toBe(124);
    const lines = jsonLines(r.stdout);
    const lifecycle = lines.filter((l) => l.type === "event" && l.stream === "lifecycle");
    expect(lifecycle.map((l) => l.data?.phase)).toEqual(["start", "error"]);
    expect(lifecycle[1].data).toMatchObject({ status: "timeout", kind: "timeout" });
    expect(String(lifecycle[1].data?.error)).toMatch(/timed out/);
    expect(lines.at(-1)).toMatchObject({ type: "result", status: "timeout" });
  });

  it("Ctrl-C during a slow turn: exit 130, what streamed is kept, and the session is usable again", async () => {
    const { loopgate, configFor } = sandbox();
    const config = configFor("slow-chunks.script.json5");
    let interrupted = false;
    const r = await loopgate(
      ["agent", "--local", "--message", "tell me a story", "--config", config],
      (soFar, child) => {
        if (!interrupted && soFar.includes("first chunk")) {
          interrupted = true;
          child.kill("SIGINT");
        }
      },
    );
    expect(interrupted).toBe(true);
    expect(r.code).toBe(130);
    expect(r.stdout).toContain("first chunk");
    expect(r.stdout).not.toContain("second chunk");
    expect(r.stderr).toMatch(/aborted/);

    const shown = await loopgate(["sessions", "show", "main", "--config", config]);
    expect(shown.stdout).toContain("#1 user: tell me a story");
    expect(shown.stdout).toContain("#2 assistant: first chunk");

    // the write lock was released on the way out: the next turn in the same session runs at once
    const next = await loopgate([
      "agent",
      "--local",
      "--message",
      "again",
      "--config",
      configFor("hello.script.json5"),
    ]);
    expect(next.code).toBe(0);
    expect(next.stdout).toBe("Hello, again!\n");
  });
});

describe.concurrent("loopgate sessions", { timeout: TEST_TIMEOUT_MS }, () => {
  it("list and show reveal what earlier CLI processes wrote", async () => {
    const { loopgate, configFor } = sandbox();
    const config = configFor("hello.script.json5");
    expect((await loopgate(["agent", "--local", "--message", "first message", "--config", config])).code).toBe(0);
    expect((await loopgate(["agent", "--local", "--message", "second message", "--config", config])).code).toBe(0);
    // each reader is a new process
    const [list, show] = await Promise.all([
      loopgate(["sessions", "list", "--config", config]),
      loopgate(["sessions", "show", "agent:main:main", "--config", config]),
    ]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^agent:main:main\s.*generation 1/m);

    expect(show.code).toBe(0);
    const rows = show.stdout.split("\n").filter((l) => l.startsWith("#"));
    expect(rows).toEqual([
      "#1 user: first message",
      "#2 assistant: Hello, first message!",
      "#3 user: second message",
      "#4 assistant: Hello, second message!",
    ]);
  });

  it("an unknown session is reported, exit 1; a malformed key is a usage error, exit 2", async () => {
    const { loopgate, configFor } = sandbox();
    const config = configFor("hello.script.json5");
    const [unknown, malformed] = await Promise.all([
      loopgate(["sessions", "show", "agent:main:nothing-here", "--config", config]),
      loopgate(["sessions", "show", "agent::x", "--config", config]),
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no session "agent:main:nothing-here"');
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('invalid session key "agent::x"');
    noStackTrace(malformed.stderr);
  });
});

describe.concurrent("loopgate sessions (bare: the list)", { timeout: TEST_TIMEOUT_MS }, () => {
  it("lists sessions newest first with local times and their zone; --limit keeps the newest n", async () => {
    const { loopgate, configFor } = sandbox();
    const config = configFor("hello.script.json5");
    for (const key of ["one", "two", "three"]) {
      expect((await loopgate(["agent", "--local", "-m", "hi", "-s", key, "--config", config])).code).toBe(0);
    }
    const [all, two] = await Promise.all([
      loopgate(["sessions", "--config", config], undefined, { TZ: "Asia/Kolkata" }),
      loopgate(["sessions", "--limit", "2", "--config", config], undefined, { TZ: "UTC" }),
    ]);
    expect(all.code).toBe(0);
    const keys = (r: CliResult) =>
      r.stdout
        .trim()
        .split("\n")
        .map((l) => l.split(/\s+/)[0]);
    expect(keys(all)).toEqual(["agent:main:three", "agent:main:two", "agent:main:one"]);
    expect(all.stdout).toMatch(/updated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\+05:30 /);
    expect(all.stderr).toBe("");
    expect(two.code).toBe(0);
    expect(keys(two)).toEqual(["agent:main:three", "agent:main:two"]);
    expect(two.stdout).toMatch(/UTC\+00:00 /);
    expect(two.stderr).toContain("showing the 2 most recent of 3");
  });

  it("--json gives objects whose JSON fields are parsed, not strings", async () => {
    const { loopgate, configFor } = sandbox();
    const config = configFor("hello.script.json5");
    expect((await loopgate(["agent", "--local", "-m", "hi", "--config", config])).code).toBe(0);
    const r = await loopgate(["sessions", "--json", "--config", config]);
    expect(r.code).toBe(0);
    const sessions = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    expect(sessions).toHaveLength(1);
    expect(sessions[0].key).toBe("agent:main:main");
    expect(typeof sessions[0].skillsSnapshot).toBe("object");
  });

  it("a bad --limit is a usage error that names the flag and the value", async () => {
    const { loopgate, configFor } = sandbox();
    const config = configFor("hello.script.json5");
    for (const bad of ["0", "-3", "ten", "1.5"]) {
      const r = await loopgate(["sessions", "--limit", bad, "--config", config]);
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toContain(`--limit: expected a positive whole number, got "${bad}"`);
    }
  });
});

describe.concurrent("what the CLI writes where", { timeout: TEST_TIMEOUT_MS }, () => {
  const escapes = /\x1b\[/;

  it("piped output has no escape codes; FORCE_COLOR adds them to the tool line; --no-color wins", async () => {
    const { loopgate, configFor } = sandbox();
    const config = configFor("tool.script.json5");
    const args = ["agent", "--local", "-m", "run it", "--config", config];
    const [piped, forced, refused] = await Promise.all([
      loopgate(args, undefined, { NO_COLOR: "" }),
      loopgate(args, undefined, { NO_COLOR: "", FORCE_COLOR: "1" }),
      loopgate([...args, "--no-color"], undefined, { NO_COLOR: "", FORCE_COLOR: "1" }),
    ]);
    for (const r of [piped, forced, refused]) expect(r.code).toBe(0);
    expect(piped.stdout + piped.stderr).not.toMatch(escapes);
    expect(piped.stderr).toContain("⚙ exec echo tool-ran → ok");
    expect(forced.stderr).toMatch(escapes);
    expect(forced.stdout, "the reply itself is never coloured").not.toMatch(escapes);
    expect(refused.stdout + refused.stderr).not.toMatch(escapes);
  });

  it("a second process on a busy session reports one wait for the lock holder's pid, then runs", async () => {
    const { loopgate, configFor, stateDir } = sandbox();
    const config = configFor("hold-until-released.script.json5");
    const args = ["agent", "--local", "--json", "-m", "hold it", "-s", "busy", "--config", config];
    let holderPid: number | undefined;
    let waiterStarted!: () => void;
    const holding = new Promise<void>((resolve) => (waiterStarted = resolve));
    const first = loopgate(args, (soFar, child) => {
      // the tool has started: the first process holds the session write lock now
      if (holderPid === undefined && soFar.includes('"stream":"tool"')) {
        holderPid = child.pid;
        waiterStarted();
      }
    });
    await holding;
    const second = await loopgate(args, (soFar) => {
      if (soFar.includes('"phase":"waiting"')) fs.writeFileSync(path.join(stateDir, "release"), "");
    });
    expect((await first).code).toBe(0);
    expect(second.code).toBe(0);
    const lifecycle = jsonLines(second.stdout)
      .filter((l) => l.stream === "lifecycle")
      .map((l) => l.data);
    expect(lifecycle.map((d) => [d?.phase, d?.for])).toEqual([
      ["start", undefined],
      ["waiting", "session_lock"],
      ["waiting", "model"],
      ["end", undefined],
    ]);
    expect(lifecycle[0]).toMatchObject({ model: "script/fake-model" });
    expect(lifecycle[1]).toMatchObject({ holderPid });
    // the lock file's path is the server's business: it is not sent to clients
    expect(lifecycle[1]).not.toHaveProperty("lockPath");
    expect(lifecycle[2]).toMatchObject({ model: "script/fake-model" });
  });

  it("Ctrl-C while a tool runs: the tool line says aborted, exit 130", async () => {
    const { loopgate, configFor } = sandbox();
    const r = await loopgate([
      "agent",
      "--local",
      "-m",
      "go",
      "--config",
      configFor("interrupt-during-tool.script.json5"),
    ]);
    expect(r.code).toBe(130);
    expect(r.stderr).toContain("⚙ exec kill -INT $PPID; sleep 5 → aborted\n");
    expect(r.stderr).not.toContain("(no output)");
    expect(r.stdout).toBe("");
  });
});

// Skipped without LOOPGATE_TEST_POSTGRES_URL: the refusal is checked against a real, migrated fleet database.
describe.skipIf(!testPostgresUrl)("loopgate agent --local on a Postgres config", () => {
  it("is refused with exit 2 and a message saying to go through a gateway, before anything is written", async () => {
    const url = testPostgresUrl as string;
    const ts = await createTestSchema(url);
    try {
      // the fleet's database as a gateway left it: migrated, no sessions
      const storage = { backend: "postgres" as const, postgres: { url, schema: ts.schema } };
      const fleet = await openBackend(parseConfig({ storage }), "", { env: {} });
      await fleet.store.close();
      const { loopgate, configFor, stateDir } = sandbox();
      const r = await loopgate([
        "agent",
        "--local",
        "-m",
        "hi",
        "--config",
        configFor("hello.script.json5", { storage }),
      ]);
      console.log(`exit ${r.code}: ${r.stderr.trim()}`);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(
        'loopgate agent --local: this config uses storage.backend "postgres" (a gateway fleet); an embedded run would write to the fleet\'s sessions without a lease. Send the message through a gateway (loopgate agent without --local), or use a SQLite state dir.',
      );
      expect(r.stdout).toBe("");
      const db = new pg.Client({ connectionString: url });
      await db.connect();
      try {
        const { rows } = await db.query(
          `SELECT (SELECT count(*) FROM ${ts.schema}.sessions)::int AS sessions, (SELECT count(*) FROM ${ts.schema}.runs)::int AS runs`,
        );
        expect(rows[0]).toEqual({ sessions: 0, runs: 0 });
      } finally {
        await db.end();
      }
      // nor was a workspace or a SQLite file made in the state dir
      expect(fs.existsSync(path.join(stateDir, "loopgate.sqlite"))).toBe(false);
    } finally {
      await ts.drop();
    }
  });
});
