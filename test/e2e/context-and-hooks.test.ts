/*
 * Workspace context and install hooks through the real CLI: `node dist/cli/main.js` child processes (run
 * `npm run build` first) with their own state dir, HOME and TMPDIR inside a temp dir, and a JSON5 config passed
 * with --config. Model turns go through the real openai-completions provider to the fake model server on loopback,
 * which keeps every request body it received.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type FakeModelServer, startFakeModelServer } from "../../src/testing/fake-model-server.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const cliEntry = path.join(repo, "dist", "cli", "main.js");
const fixtures = path.join(repo, "test", "fixtures", "integration");

let tmp: string;
let stateDir: string;
let childTmp: string;

beforeAll(() => {
  if (!fs.existsSync(cliEntry)) throw new Error(`${cliEntry} not found: run \`npm run build\` first`);
});

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-ctx-e2e-")));
  stateDir = path.join(tmp, "state");
  childTmp = path.join(tmp, "child-tmp");
  fs.mkdirSync(childTmp);
});

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI without any of the developer's keys or config; kills it if it has not exited after 15 s. */
function loopgate(args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(LOOPGATE_|OPENAI_|ANTHROPIC_|OPENCLAW_)/.test(key)) env[key] = value;
  }
  Object.assign(env, { LOOPGATE_STATE_DIR: stateDir, HOME: tmp, TMPDIR: childTmp, NO_COLOR: "1" });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliEntry, ...args], { cwd: tmp, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => {
      stdout += s;
    });
    child.stderr.setEncoding("utf8").on("data", (s: string) => {
      stderr += s;
    });
    const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}

function writeConfig(config: Record<string, unknown>): string {
  const file = path.join(tmp, "loopgate.json5");
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

function listDir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

describe("workspace context in the model request (agent --local, openai-completions)", () => {
  let server: FakeModelServer;

  beforeEach(async () => {
    server = await startFakeModelServer();
  });

  afterEach(async () => {
    await server.close();
  });

  function modelConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      models: {
        providers: {
          fake: {
            api: "openai-completions",
            baseUrl: server.baseUrl,
            apiKey: "sk-test",
            models: [{ id: "fake-model" }],
          },
        },
      },
      agents: { defaults: { model: { primary: "fake/fake-model" }, ...extra } },
    };
  }

  function systemMessage(body: Record<string, unknown>): string {
    const messages = body.messages as Array<{ role: string; content: unknown }>;
    expect(messages[0].role).toBe("system");
    return String(messages[0].content);
  }

  it("sends the workspace's AGENTS.md in the system message", async () => {
    const workspace = path.join(tmp, "workspace");
    fs.mkdirSync(workspace);
    const marker = "Always sign replies with the code LG-AGENTS-MARKER-91b2.";
    fs.writeFileSync(path.join(workspace, "AGENTS.md"), `# House rules\n\n${marker}\n`);
    const config = writeConfig(modelConfig({ workspace }));

    const run = await loopgate(["agent", "--local", "-m", "hello there", "--config", config]);

    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("Hello from the fake model.");
    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    expect(request.path).toBe("/v1/chat/completions");
    expect(systemMessage(request.body)).toContain(`## AGENTS.md\n# House rules\n\n${marker}`);
    const messages = request.body.messages as Array<{ role: string; content: unknown }>;
    expect(messages.at(-1)).toEqual({ role: "user", content: "hello there" });
  });

  it("keeps the default first-turn request with the starter workspace under 8 KB", async () => {
    // No workspace configured and a fresh state dir: the CLI creates <state>/workspace with the starter files.
    const config = writeConfig(modelConfig());

    const run = await loopgate(["agent", "--local", "-m", "hi", "--config", config]);

    expect(run.code, run.stderr).toBe(0);
    const [request] = server.requests;
    const system = systemMessage(request.body);
    expect(system).toContain("## BOOTSTRAP.md\n# First run");
    expect(system).toContain("## SOUL.md");
    const bodyBytes = Buffer.byteLength(JSON.stringify(request.body));
    const systemBytes = Buffer.byteLength(system);
    console.log(
      `first-turn request body with the starter workspace: ${bodyBytes} bytes (system message ${systemBytes} bytes)`,
    );
    expect(bodyBytes).toBeLessThan(8 * 1024);
  });
});

describe("skills install CLI", () => {
  const workspace = () => path.join(tmp, "workspace");
  const skillsDir = () => path.join(workspace(), "skills");

  function installConfig(extra: Record<string, unknown> = {}): string {
    return writeConfig({ agents: { defaults: { workspace: workspace() } }, ...extra });
  }

  it("installs a skill folder into <workspace>/skills/<name>", async () => {
    const config = installConfig();
    const run = await loopgate(["skills", "install", path.join(fixtures, "install", "notes-v1"), "--config", config]);

    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("installed skill notes");
    const installed = path.join(skillsDir(), "notes");
    expect(fs.readFileSync(path.join(installed, "SKILL.md"), "utf8")).toContain("Keeps meeting notes (version 1).");
    expect(fs.existsSync(path.join(installed, "old-helper.txt"))).toBe(true);
    expect(listDir(childTmp)).toEqual([]);
  });

  it("refuses a skill named in security.installPolicy.deny and leaves nothing in the skills dir", async () => {
    const config = installConfig({ security: { installPolicy: { deny: ["notes"] } } });
    const run = await loopgate(["skills", "install", path.join(fixtures, "install", "notes-v1"), "--config", config]);

    expect(run.code).toBe(1);
    expect(run.stderr).toContain('"notes" matches deny pattern "notes"');
    expect(listDir(skillsDir())).toEqual([]);
    expect(listDir(childTmp)).toEqual([]);
  });

  it("fails when a before_install plugin blocks, prints its finding and leaves nothing behind", async () => {
    const config = installConfig({
      plugins: { load: { paths: [path.join(fixtures, "plugins", "install-scanner.mjs")] } },
    });
    const run = await loopgate(["skills", "install", path.join(fixtures, "install", "fetcher"), "--config", config]);

    expect(run.code).toBe(1);
    expect(run.stderr).toContain("finding [critical] (install-scanner): helper.sh pipes curl into sh — helper.sh");
    expect(run.stderr).toContain('blocked by plugin "install-scanner"');
    expect(listDir(skillsDir())).toEqual([]);
    expect(listDir(childTmp)).toEqual([]);
  });

  it("replaces an installed skill with --update", async () => {
    const config = installConfig();
    const v1 = path.join(fixtures, "install", "notes-v1");
    const v2 = path.join(fixtures, "install", "notes-v2");
    expect((await loopgate(["skills", "install", v1, "--config", config])).code).toBe(0);

    const update = await loopgate(["skills", "install", v2, "--update", "--config", config]);
    expect(update.code, update.stderr).toBe(0);
    expect(update.stdout).toContain("updated skill notes");
    const installed = path.join(skillsDir(), "notes");
    expect(fs.readFileSync(path.join(installed, "SKILL.md"), "utf8")).toContain("(version 2)");
    // A replacement, not a merge: files only the old version had are gone, and no swap leftovers remain.
    expect(fs.existsSync(path.join(installed, "old-helper.txt"))).toBe(false);
    expect(listDir(skillsDir())).toEqual(["notes"]);
  });
});
