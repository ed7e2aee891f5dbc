import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";

// Two `loopgate agent --local` processes on one session and one state dir: the session write lock (SPEC 3) is
// the only thing that keeps their transcript writes apart, since each process has its own in-memory queue.

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const mainJs = path.join(root, "dist/cli/main.js");
const fixtures = path.join(root, "test/fixtures/queue");

interface Exited {
  code: number | null;
  stdout: string;
  stderr: string;
}

const children: ChildProcess[] = [];
const tempDirs: string[] = [];

beforeAll(() => {
  if (!fs.existsSync(mainJs)) throw new Error(`${mainJs} is missing: run \`npm run build\` before the e2e tests`);
});

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const d of tempDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function stateDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-two-process-"));
  tempDirs.push(dir);
  // created up front so the test can watch it for the lock file
  fs.mkdirSync(path.join(dir, "sessions"));
  return dir;
}

function cleanEnv(dir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("LOOPGATE_") || k.startsWith("OPENCLAW_")) delete env[k];
  return { ...env, LOOPGATE_STATE_DIR: dir, NO_COLOR: "1", ...extra };
}

function loopgate(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; exited: Promise<Exited> } {
  const child = spawn(process.execPath, [mainJs, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr?.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const exited = new Promise<Exited>((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
  return { child, exited };
}

function agent(dir: string, config: string, message: string, extraEnv: Record<string, string> = {}) {
  return loopgate(
    ["agent", "--local", "--message", message, "--session-key", "k", "--config", path.join(fixtures, config)],
    cleanEnv(dir, extraEnv),
  );
}

/** Resolves with the lock file's path once `holder` has created it (no polling: the directory is watched). */
function lockTaken(dir: string, holder: ChildProcess): Promise<string> {
  const sessions = path.join(dir, "sessions");
  return new Promise((resolve, reject) => {
    let watcher: fs.FSWatcher | undefined;
    const finish = (lockPath?: string) => {
      watcher?.close();
      holder.off("close", onClose);
      if (lockPath) resolve(lockPath);
      else reject(new Error("the first process exited before it took the session write lock"));
    };
    const check = () => {
      const name = fs.readdirSync(sessions).find((n) => n.endsWith(".lock"));
      if (name) finish(path.join(sessions, name));
    };
    const onClose = () => finish();
    holder.on("close", onClose);
    watcher = fs.watch(sessions, check);
    check();
  });
}

interface Row {
  seq: number;
  runId: string;
  message: { role: string; content: unknown };
}

async function transcript(dir: string): Promise<Row[]> {
  const shown = await loopgate(["sessions", "show", "k", "--json"], cleanEnv(dir)).exited;
  expect(shown.code, shown.stderr).toBe(0);
  return (JSON.parse(shown.stdout) as { transcript: Row[] }).transcript;
}

function text(row: Row): string {
  const c = row.message.content;
  if (typeof c === "string") return c;
  return (c as Array<{ type: string; text?: string }>).map((b) => b.text ?? `[${b.type}]`).join("");
}

describe("two processes writing one session", () => {
  it("both complete, one after the other, and the transcript holds each turn whole", async () => {
    const dir = stateDir();
    const first = agent(dir, "slow.loopgate.json5", "from the first process");
    await lockTaken(dir, first.child);
    // the first process now holds the lock for its whole (slow) model call; the second must wait for it
    const second = agent(dir, "quick.loopgate.json5", "from the second process");
    const [a, b] = await Promise.all([first.exited, second.exited]);

    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const rows = await transcript(dir);
    expect(rows.map((r) => [r.message.role, text(r)])).toEqual([
      ["user", "from the first process"],
      ["assistant", "answer to from the first process"],
      ["user", "from the second process"],
      ["assistant", "answer to from the second process"],
    ]);
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4]);
    expect(rows[0].runId).toBe(rows[1].runId);
    expect(rows[2].runId).toBe(rows[3].runId);
    expect(rows[0].runId).not.toBe(rows[2].runId);
  });

  it("a writer that cannot get the lock within its acquire timeout fails with session busy and writes nothing", async () => {
    const dir = stateDir();
    const release = path.join(dir, "release");
    const holder = agent(dir, "held.loopgate.json5", "holding the session", { RELEASE_FILE: release });
    const lockPath = await lockTaken(dir, holder.child);

    const busy = await agent(dir, "held.loopgate.json5", "too late", {
      RELEASE_FILE: release,
      LOOPGATE_SESSION_WRITE_LOCK_ACQUIRE_TIMEOUT_MS: "300",
    }).exited;
    fs.writeFileSync(release, "");
    const held = await holder.exited;

    expect(busy.code).toBe(1);
    const said = busy.stdout + busy.stderr;
    expect(said).toContain("session is busy");
    expect(said).toContain(`pid ${holder.child.pid}`);
    expect(said).toContain(lockPath);

    expect(held.code, held.stderr).toBe(0);
    const rows = await transcript(dir);
    // the holder's turn: user, assistant (tool call), tool result, assistant; nothing from the refused writer
    expect(rows).toHaveLength(4);
    expect(new Set(rows.map((r) => r.runId)).size).toBe(1);
    expect(rows.map((r) => text(r)).join("\n")).not.toContain("too late");
    expect(fs.existsSync(lockPath)).toBe(false);
  });
});
