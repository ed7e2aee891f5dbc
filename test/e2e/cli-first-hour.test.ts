/*
 * Issue 27, items 2, 3 and 5 (the CLI side of "the first hour"): real child processes of dist/cli/main.js (run
 * `npm run build` first), real pipes and a real SQLite state dir per test.
 */
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { createStore } from "../../src/node/backend.js";
import { cli, cliSandbox, useCliSandboxes } from "../fixtures/cli/sandbox.js";

useCliSandboxes();

/** A Node older than 22 on this machine (the distribution's), or undefined: the check needs one to run against. */
function oldNode(): string | undefined {
  for (const candidate of ["/usr/bin/node", "/bin/node", "/usr/local/bin/node"]) {
    if (!fs.existsSync(candidate)) continue;
    const version = spawnSync(candidate, ["-p", "process.versions.node"], { encoding: "utf8" }).stdout.trim();
    if (Number(version.split(".")[0]) < 22) return candidate;
  }
  return undefined;
}

/** Writes `count` sessions straight into the sandbox's store, so a listing is longer than a pipe's buffer. */
async function seedSessions(configPath: string, stateDir: string, count: number): Promise<void> {
  const { config } = loadConfig({ configPath, env: { LOOPGATE_STATE_DIR: stateDir } });
  const store = await createStore(config, stateDir);
  try {
    for (let i = 0; i < count; i++) await store.ensureSession(`agent:main:seeded-${i}`, "main", Date.now() + i);
  } finally {
    await store.close();
  }
}

describe("startup check", () => {
  const old = oldNode();
  it.skipIf(!old)("node-too-old-says-so: an old Node prints the version it needs and exits 1", () => {
    const r = spawnSync(old!, [cli, "sessions", "list"], { encoding: "utf8" });
    process.stdout.write(`${old} ${cli} sessions list → exit ${r.status}, stderr: ${r.stderr}`);
    expect(r.stderr).toMatch(/^loopgate needs Node\.js >= 22\.12 \(this is v\d+\.\d+\.\d+\)\n$/);
    expect(r.status).toBe(1);
  });

  // the check above runs only where an old Node is installed; this one holds on every machine: a Node without
  // process.getBuiltinModule (older than 20.16 and 22.3) must reach the check, so the entry imports nothing
  // statically and asks for no built-in before it
  it("bin-entry-checks-node-before-anything: the installed main.js has no static import and looks up no built-in before its version check", () => {
    const text = fs.readFileSync(cli, "utf8");
    expect(text).not.toMatch(/^import\b/m);
    const check = text.indexOf("nodeIsTooOld(process.versions.node)");
    expect(check).toBeGreaterThan(0);
    expect(text.slice(0, check)).not.toContain("getBuiltinModule");
  });
});

describe("stdout closed by its reader", () => {
  it("epipe-exits-quietly: `sessions list | head -1` prints one line, no trace, exit 0", async () => {
    const s = cliSandbox({ prefix: "epipe" });
    const stateDir = s.env.LOOPGATE_STATE_DIR!;
    await seedSessions(s.config, stateDir, 3000);
    // a real shell pipeline, as a user types it; PIPESTATUS gives loopgate's own exit code
    const script = `"${process.execPath}" "${cli}" sessions list --limit 3000 --config "${s.config}" 2>"${s.tmp}/err" | head -1; echo "exit=\${PIPESTATUS[0]}"`;
    const out = execFileSync("bash", ["-c", script], { env: s.env, encoding: "utf8" });
    const stderr = fs.readFileSync(path.join(s.tmp, "err"), "utf8");
    process.stdout.write(`stdout: ${out}stderr (${stderr.split("\n").length - 1} lines): ${stderr.slice(0, 300)}\n`);
    const lines = out.trim().split("\n");
    expect(lines[0]).toMatch(/^agent:main:seeded-\d+ {2}updated /);
    expect(stderr).toBe("");
    expect(lines[1]).toBe("exit=0");
  });
});

/** `loopgate <args>` in the sandbox with `input` on stdin (a real pipe), to the end. */
function runWithStdin(s: ReturnType<typeof cliSandbox>, args: string[], input: string) {
  const r = spawnSync(process.execPath, [cli, ...args], { cwd: s.tmp, env: s.env, input, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("the message of loopgate agent", () => {
  it("message-from-stdin: `-m -` sends what stdin holds, not a literal -", async () => {
    const s = cliSandbox({ prefix: "msgstdin" });
    const r = runWithStdin(s, ["agent", "--local", "--config", s.config, "-m", "-"], "hello from a pipe\n");
    expect(r.stderr).toMatch(/— ok/);
    const show = await s.run(["sessions", "show", "agent:main:main", "--config", s.config]).done;
    process.stdout.write(show.stdout);
    expect(show.stdout).toMatch(/#\d+ user: hello from a pipe\n/);
    expect(show.stdout).not.toMatch(/user: -\n/);
  });

  it("message-file-is-sent: --message-file sends the file's text", async () => {
    const s = cliSandbox({ prefix: "msgfile" });
    const file = path.join(s.tmp, "prompt.txt");
    fs.writeFileSync(file, "first line\nsecond line\n");
    const r = await s.agent(["--local", "--message-file", file]).done;
    expect(r.code).toBe(0);
    const show = await s.run(["sessions", "show", "agent:main:main", "--config", s.config, "--json"]).done;
    const rows = (JSON.parse(show.stdout) as { transcript: Array<{ message?: { role: string; content: unknown } }> })
      .transcript;
    const user = rows.find((row) => row.message?.role === "user");
    expect(JSON.stringify(user?.message?.content)).toContain("first line\\nsecond line");
  });

  it("message-twice-is-an-error: `-m a -m b` names the flag and sends nothing", async () => {
    const s = cliSandbox({ prefix: "msgtwice" });
    const r = await s.agent(["--local", "-m", "a", "-m", "b"]).done;
    process.stdout.write(`exit ${r.code}: ${r.stderr}`);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "loopgate: -m/--message: given 2 times; give it once (for longer text use --message-file <path> or -m - to read stdin)\n",
    );
    const list = await s.run(["sessions", "list", "--config", s.config]).done;
    expect(list.stdout).toMatch(/^no sessions yet/);
    // cron add's -m too: one message per job
    const cron = await s.run(["cron", "add", "--id", "j", "--schedule", "* * * * *", "-m", "a", "-m", "b"]).done;
    process.stdout.write(`cron add: exit ${cron.code}: ${cron.stderr}`);
    expect(cron.code).toBe(2);
    expect(cron.stderr).toMatch(
      /^error: .*-m\/--message given more than once; give it once\n\(see loopgate cron add --help\)\n$/,
    );
  });

  it("message-sources-both-or-neither: -m with --message-file, or no message at all, is a usage error", async () => {
    const s = cliSandbox({ prefix: "msgboth" });
    const file = path.join(s.tmp, "p.txt");
    fs.writeFileSync(file, "x");
    const both = await s.agent(["--local", "-m", "a", "--message-file", file]).done;
    const neither = await s.agent(["--local"]).done;
    const missing = await s.agent(["--local", "--message-file", path.join(s.tmp, "nope.txt")]).done;
    process.stdout.write(`${both.stderr}${neither.stderr}${missing.stderr}`);
    expect([both.code, neither.code, missing.code]).toEqual([2, 2, 2]);
    expect(both.stderr).toContain("-m/--message and --message-file: give one of them, not both");
    expect(neither.stderr).toContain("-m/--message is required");
    expect(missing.stderr).toContain(`--message-file ${path.join(s.tmp, "nope.txt")}: no such file`);
  });
});

describe("--verbose in text mode", () => {
  it("verbose-full-prints-tool-detail: full shows the call's arguments and result; on keeps one line", async () => {
    const s = cliSandbox({ prefix: "verbose", script: "exec-env.script.json5" });
    const full = await s.agent(["--local", "-m", "go", "--verbose", "full"], { PROJECT_MARK: "x" }).done;
    const on = await s.agent(["--local", "-m", "go", "--verbose", "on", "-s", "other"]).done;
    process.stdout.write(`full:\n${full.stderr.slice(0, 400)}\non:\n${on.stderr}`);
    expect(full.code).toBe(0);
    expect(full.stderr).toMatch(
      /⚙ exec env → ok \(\d+ lines\)\n {4}args: \{\n {4} {2}"command": "env"\n {4}\}\n {4}result:\n {4}\S/,
    );
    expect(full.stderr).toMatch(/\n {4}PATH=/);
    expect(on.stderr).toMatch(/⚙ exec env → ok \(\d+ lines\)\n/);
    expect(on.stderr).not.toContain("result:");
    expect(on.stderr).not.toMatch(/\n {4}PATH=/);
  });
});

describe("usage errors", () => {
  it("unknown-option-one-line: an unknown option names itself and where help is, not the whole help, exit 2", async () => {
    const s = cliSandbox({ prefix: "unknownopt" });
    const r = await s.run(["agent", "--mesage", "hi"]).done;
    const sub = await s.run(["sessions", "list", "--bogus"]).done;
    process.stdout.write(`exit ${r.code}:\n${r.stderr}exit ${sub.code}:\n${sub.stderr}`);
    expect(r.code).toBe(2);
    // commander's own "did you mean" line is kept: it is one short line and often the answer
    expect(r.stderr).toBe("error: unknown option '--mesage'\n(Did you mean --message?)\n(see loopgate agent --help)\n");
    expect(sub.code).toBe(2);
    expect(sub.stderr).toBe("error: unknown option '--bogus'\n(see loopgate sessions list --help)\n");
  });

  it("no-local-hint-without-local: health, cron and audit do not suggest a --local they lack; agent does", async () => {
    const s = cliSandbox({ prefix: "hint" });
    const url = "ws://127.0.0.1:9"; // discard port: nothing listens
    const results = await Promise.all(
      [["health"], ["cron", "list"], ["audit"], ["agent", "-m", "hi"]].map(
        async (args) => [args.join(" "), await s.run([...args, "--url", url, "--config", s.config]).done] as const,
      ),
    );
    for (const [cmd, r] of results) {
      process.stdout.write(`${cmd} → exit ${r.code}: ${r.stderr}`);
      expect(r.stderr).toContain(`no gateway reachable at ${url}: start one with \`loopgate gateway\``);
      if (cmd.startsWith("agent")) expect(r.stderr).toContain("--local");
      else expect(r.stderr).not.toContain("--local");
    }
  });
});

describe("managing what is installed", () => {
  const fixtures = path.join(path.dirname(cli), "..", "..", "test", "fixtures", "hooks", "install");

  it("plugins-list-remove: list shows name, path and enabled; remove deletes it", async () => {
    const s = cliSandbox({ prefix: "plugins", extraConfig: { plugins: { entries: { other: { enabled: false } } } } });
    const installed = await s.run(["plugins", "install", path.join(fixtures, "plugin-audit"), "--config", s.config])
      .done;
    expect(installed.code).toBe(0);
    const pluginsDir = path.join(s.env.LOOPGATE_STATE_DIR!, "plugins");
    fs.mkdirSync(path.join(pluginsDir, "other")); // a second one, disabled by plugins.entries
    const list = await s.run(["plugins", "list", "--config", s.config]).done;
    process.stdout.write(list.stdout);
    const [name] = fs.readdirSync(pluginsDir).filter((n) => n !== "other");
    expect(list.stdout).toBe(
      `${name}  ${path.join(pluginsDir, name!)}  enabled\nother  ${path.join(pluginsDir, "other")}  disabled (plugins.entries)\n`,
    );
    const removed = await s.run(["plugins", "remove", name!, "--config", s.config]).done;
    process.stdout.write(removed.stdout);
    expect(removed.code).toBe(0);
    expect(fs.existsSync(path.join(pluginsDir, name!))).toBe(false);
    const again = await s.run(["plugins", "remove", name!, "--config", s.config]).done;
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`no plugin "${name}" installed`);
    const outside = await s.run(["plugins", "remove", "..", "--config", s.config]).done;
    expect(outside.code).toBe(2);
    expect(fs.existsSync(s.env.LOOPGATE_STATE_DIR!)).toBe(true);
  });

  it("skills-list-remove: list shows the workspace's installed skills; remove deletes one", async () => {
    const s = cliSandbox({ prefix: "skills" });
    const installed = await s.run(["skills", "install", path.join(fixtures, "skill-weather"), "--config", s.config])
      .done;
    expect(installed.code).toBe(0);
    const list = await s.run(["skills", "list", "--config", s.config, "--json"]).done;
    process.stdout.write(list.stdout);
    const items = JSON.parse(list.stdout) as Array<{ name: string; path: string }>;
    expect(items.map((i) => i.name)).toEqual(["weather"]);
    expect(fs.existsSync(path.join(items[0]!.path, "SKILL.md"))).toBe(true);
    const removed = await s.run(["skills", "remove", "weather", "--config", s.config]).done;
    expect(removed.code).toBe(0);
    expect(fs.existsSync(items[0]!.path)).toBe(false);
    const empty = await s.run(["skills", "list", "--config", s.config]).done;
    expect(empty.stdout).toMatch(/^no skills installed in /);
  });
});

describe("sessions reset and delete", () => {
  it("sessions-reset-delete-local: --local resets (new generation, old rows kept) and deletes through the state dir", async () => {
    const s = cliSandbox({ prefix: "sessreset" });
    expect((await s.agent(["--local", "-m", "remember me"]).done).code).toBe(0);
    const reset = await s.run(["sessions", "reset", "main", "--local", "--config", s.config]).done;
    process.stdout.write(reset.stdout + reset.stderr);
    expect(reset.stdout).toBe("reset agent:main:main: transcript generation 2 starts empty (the old rows are kept)\n");
    const show = await s.run(["sessions", "show", "agent:main:main", "--config", s.config]).done;
    expect(show.stdout).toMatch(/generation 2/);
    const del = await s.run(["sessions", "delete", "agent:main:main", "--local", "--config", s.config]).done;
    expect(del.stdout).toBe("deleted agent:main:main\n");
    const list = await s.run(["sessions", "list", "--config", s.config]).done;
    expect(list.stdout).toMatch(/^no sessions yet/);
    const missing = await s.run(["sessions", "reset", "nope", "--local", "--config", s.config]).done;
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('loopgate: no session "agent:main:nope" (see: loopgate sessions list)\n');
  });

  it("sessions-reset-delete-gateway: without --local they go through the running gateway", async () => {
    const s = cliSandbox({ prefix: "sessgw" });
    const gw = await s.gateway();
    expect((await s.agent(["--url", gw.url, "-m", "hi"]).done).code).toBe(0);
    const reset = await s.run(["sessions", "reset", "agent:main:main", "--url", gw.url, "--config", s.config]).done;
    process.stdout.write(reset.stdout + reset.stderr);
    expect(reset.stdout).toBe("reset agent:main:main: transcript generation 2 starts empty (the old rows are kept)\n");
    const del = await s.run(["sessions", "delete", "agent:main:main", "--url", gw.url, "--config", s.config]).done;
    expect(del.stdout).toBe("deleted agent:main:main\n");
    const missing = await s.run(["sessions", "delete", "agent:main:main", "--url", gw.url, "--config", s.config]).done;
    expect(missing.code).toBe(1);
    gw.child.kill("SIGTERM");
    await gw.done;
  });
});

describe("loopgate logs", () => {
  it("logs-shows-gateway-log: the gateway writes its log file, `logs -n` prints its end and `logs -f` follows it", async () => {
    const s = cliSandbox({ prefix: "logs" });
    const gw = await s.gateway();
    const logFile = path.join(s.env.LOOPGATE_STATE_DIR!, "logs", "gateway.log");
    let followed = "";
    let sawStart!: () => void;
    let sawRun!: () => void;
    const started = new Promise<void>((r) => (sawStart = r));
    const runLogged = new Promise<void>((r) => (sawRun = r));
    // -n 1 prints the gateway's "listening" line first: from then on the follower is reading
    const follow = s.run(["logs", "-f", "-n", "1", "--config", s.config], {
      onStdout: (soFar) => {
        followed = soFar;
        if (/ INFO {2}listening /.test(soFar)) sawStart();
        if (/run ended/.test(soFar)) sawRun();
      },
    });
    await Promise.race([started, follow.done.then((r) => expect.fail(`logs -f ended: ${JSON.stringify(r)}`))]);
    expect((await s.agent(["--url", gw.url, "-m", "hi"]).done).code).toBe(0);
    await Promise.race([runLogged, follow.done.then((r) => expect.fail(`logs -f ended: ${JSON.stringify(r)}`))]);
    follow.child.kill("SIGINT");
    gw.child.kill("SIGTERM");
    const gwResult = await gw.done;
    expect(gwResult.stdout).toContain(`log: ${logFile} (loopgate logs -f)`);
    const tail = await s.run(["logs", "-n", "2", "--config", s.config]).done;
    process.stdout.write(`followed:\n${followed}tail:\n${tail.stdout}`);
    expect(followed).toMatch(/ INFO {2}run accepted /);
    expect(tail.stdout.split("\n").filter(Boolean)).toHaveLength(2);
    expect(tail.stdout).toMatch(/ INFO {2}stopped\n$/);
    expect((fs.statSync(logFile).mode & 0o777).toString(8)).toBe("600");
  });
});
