import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { processesHoldingFile } from "./sqlite-holders.js";
import { openStore } from "./sqlite-store.js";

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
});

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
function stateDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-holders-"));
  dirs.push(d);
  return d;
}

/** Another process that opens the database with better-sqlite3 and keeps it open until killed. */
function holdOpen(file: string): Promise<ChildProcess> {
  const script = `const D = require("better-sqlite3"); const db = new D(${JSON.stringify(file)}); db.prepare("SELECT count(*) FROM sessions").get(); process.stdout.write("open\\n"); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ["-e", script], { cwd: process.cwd(), stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout?.on("data", () => resolve(child));
    child.on("exit", (code) => reject(new Error(`holder exited ${code}`)));
  });
}

// /proc is Linux's; elsewhere the check asks lsof, which this test does not assume is installed
describe.skipIf(!fs.existsSync("/proc/self/fd"))("which processes have a state dir's database open", () => {
  it("names another process that has the store open, with its command line", async () => {
    const dir = stateDir();
    openStore(dir).close();
    const file = path.join(dir, "loopgate.sqlite");
    expect(processesHoldingFile(file)).toEqual([]);
    const holder = await holdOpen(file);
    const found = processesHoldingFile(file) ?? [];
    expect(found.map((h) => h.pid)).toEqual([holder.pid]);
    expect(found[0]?.command).toContain("better-sqlite3");
  });

  it("does not count the asking process itself", () => {
    const dir = stateDir();
    const store = openStore(dir);
    try {
      expect(processesHoldingFile(path.join(dir, "loopgate.sqlite"))).toEqual([]);
    } finally {
      store.close();
    }
  });

  it("a file that does not exist is held by nobody", () => {
    expect(processesHoldingFile(path.join(stateDir(), "loopgate.sqlite"))).toEqual([]);
  });
});
