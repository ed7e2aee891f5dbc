/*
 * `loopgate plugins install` as a user runs it: real child processes of dist/cli/main.js (run `npm run build`
 * first) with their own state dir, HOME and TMPDIR in a temp dir. Plugins land in <state>/plugins/<name>.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const cliEntry = path.join(repo, "dist", "cli", "main.js");
const auditPlugin = path.join(repo, "test", "fixtures", "hooks", "install", "plugin-audit");

let tmp: string;
let childTmp: string;
const pluginsDir = () => path.join(tmp, "state", "plugins");
const listDir = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir) : []);

beforeAll(() => {
  if (!fs.existsSync(cliEntry)) throw new Error(`${cliEntry} not found: run \`npm run build\` first`);
});

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-plugins-e2e-")));
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

function loopgate(args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(LOOPGATE_|OPENAI_|ANTHROPIC_|OPENCLAW_)/.test(key)) env[key] = value;
  }
  Object.assign(env, { LOOPGATE_STATE_DIR: path.join(tmp, "state"), HOME: tmp, TMPDIR: childTmp, NO_COLOR: "1" });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliEntry, ...args], { cwd: tmp, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s));
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    const guard = setTimeout(() => child.kill("SIGKILL"), 15_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(guard);
      resolve({ code, stdout, stderr });
    });
  });
}

const stderrLines = (r: Run) => r.stderr.split("\n").filter((l) => l !== "");

describe("plugins install CLI", () => {
  it("refuses a folder without a loadable entry, says what it looked for, and leaves nothing behind", async () => {
    const folder = path.join(tmp, "notes-only");
    fs.mkdirSync(folder);
    fs.writeFileSync(path.join(folder, "README.md"), "not code\n");
    const r = await loopgate(["plugins", "install", folder]);
    expect(r.code).toBe(1);
    expect(stderrLines(r)).toEqual([
      'loopgate: plugin install blocked: not a loadable plugin: no entry file: looked for package.json "main" and index.js',
    ]);
    expect(listDir(pluginsDir())).toEqual([]);
    expect(listDir(childTmp)).toEqual([]);
  });

  it("a source path that does not exist is a usage error (exit 2), printed once", async () => {
    const r = await loopgate(["plugins", "install", "./no-such-plugin"]);
    expect(r.code).toBe(2);
    expect(stderrLines(r)).toEqual(["loopgate: plugins install: no such directory: ./no-such-plugin"]);
    expect(r.stdout).toBe("");
    expect(listDir(pluginsDir())).toEqual([]);
  });

  it("installing an installed plugin again is refused with a hint to use --update, which replaces it", async () => {
    const first = await loopgate(["plugins", "install", auditPlugin]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("installed plugin audit-log");

    const again = await loopgate(["plugins", "install", auditPlugin]);
    expect(again.code).toBe(1);
    expect(stderrLines(again)).toHaveLength(1);
    expect(again.stderr).toMatch(/"audit-log" is already installed at .*; use --update to replace it/);

    const update = await loopgate(["plugins", "install", auditPlugin, "--update"]);
    expect(update.code, update.stderr).toBe(0);
    expect(update.stdout).toContain("updated plugin audit-log");
    expect(listDir(pluginsDir())).toEqual(["audit-log"]);
  });
});
