/*
 * A database with a corrupted page, made for real: a store written through SqliteStore, closed, then bytes of
 * one b-tree page's cell pointers overwritten in the file. `loopgate gateway` runs as a child process.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/storage/sqlite-store.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const cli = path.join(root, "dist", "cli", "main.js");
const script = path.join(root, "test", "fixtures", "gateway", "reply.script.json5");

const cleanup: Array<() => void> = [];
afterAll(() => {
  for (const fn of cleanup.splice(0)) fn();
});

/** A state dir whose database has 200 transcript rows and then a damaged last page. */
function corruptedStateDir(): { dir: string; stateDir: string; file: string } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-corrupt-")));
  cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const stateDir = path.join(dir, "state");
  const file = path.join(stateDir, "loopgate.sqlite");
  const store = new SqliteStore(file);
  store.ensureSession("agent:main:main", "main", 1);
  store.appendTranscript(
    Array.from({ length: 200 }, (_, i) => ({
      sessionKey: "agent:main:main",
      kind: "message" as const,
      createdAt: i,
      message: { role: "user" as const, content: `${"hello ".repeat(50)}${i}` },
    })),
  );
  store.close();
  const db = new Database(file, { readonly: true });
  const pageSize = db.pragma("page_size", { simple: true }) as number;
  const pages = db.pragma("page_count", { simple: true }) as number;
  db.close();
  // the cell pointer array of a leaf page starts 8 bytes in: pointers that overlap are what quick_check catches
  const fd = fs.openSync(file, "r+");
  fs.writeSync(fd, Buffer.alloc(16, 0x0f), 0, 16, (pages - 1) * pageSize + 8);
  fs.closeSync(fd);
  return { dir, stateDir, file };
}

interface Started {
  code: number | null;
  /** the signal that ended the child, when one did */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `loopgate gateway`; a gateway that gets as far as listening is stopped with SIGTERM. */
function runGateway(dir: string, stateDir: string, extraConfig: Record<string, unknown> = {}): Promise<Started> {
  const config = path.join(dir, "loopgate.json");
  fs.writeFileSync(
    config,
    JSON.stringify({
      agents: { defaults: { model: { primary: "s/m" } } },
      models: { providers: { s: { api: "scripted", script, models: [{ id: "m" }] } } },
      ...extraConfig,
    }),
  );
  const child = spawn(process.execPath, [cli, "gateway", "--port", "0", "--config", config], {
    env: { ...process.env, LOOPGATE_STATE_DIR: stateDir, HOME: dir, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  cleanup.push(() => child.kill("SIGKILL"));
  return new Promise((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    let stopping = false;
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      stdout += c;
      // once: the lines after "listening on" can come in later chunks, and a second SIGTERM reaching the child
      // after its handler is gone ended it by signal (the flake this test used to have)
      if (!stopping && stdout.includes("listening on")) {
        stopping = true;
        child.kill("SIGTERM");
      }
    });
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const guard = setTimeout(() => child.kill("SIGKILL"), 15_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

describe("a corrupted page is not noticed at start", () => {
  it("the gateway refuses a corrupt database, naming the file and how to restore it (exit 2)", async () => {
    const { dir, stateDir, file } = corruptedStateDir();
    const r = await runGateway(dir, stateDir);
    expect(r.stdout).not.toContain("listening on");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`the database ${file} is corrupt (quick_check:`);
    expect(r.stderr).toContain("restore it from a backup");
    expect(r.stderr).toContain(".recover");
  });

  it("storage.quickCheckOnStart: false skips the check (for huge stores), so the same file starts", async () => {
    const { dir, stateDir } = corruptedStateDir();
    const r = await runGateway(dir, stateDir, { storage: { quickCheckOnStart: false } });
    expect(r.stdout).toContain("listening on");
    // on failure, say how the child ended and what it printed (a CI run once saw it end by a signal)
    expect({ code: r.code, signal: r.signal }, r.stderr).toEqual({ code: 0, signal: null });
  });
});
