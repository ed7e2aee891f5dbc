/*
 * Issue 27, items 2, 3 and 5 (the CLI side of "the first hour"): real child processes of dist/cli/main.js (run
 * `npm run build` first), real pipes and a real SQLite state dir per test.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
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
