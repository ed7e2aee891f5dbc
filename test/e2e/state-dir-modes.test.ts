/*
 * The state dir as the CLI creates it, with the common umask 022: before anything is written, the first
 * command's config cache must not create it readable by every user.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const cli = path.join(root, "dist", "cli", "main.js");
const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-statemodes-")));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Every file and dir under `dir` with its permission bits, e.g. ["state/cache", 0o700]. */
function modes(dir: string, base = dir): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  for (const name of fs.readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = fs.statSync(p);
    out.push([path.relative(base, p), st.mode & 0o777]);
    if (st.isDirectory()) out.push(...modes(p, base));
  }
  return out;
}

describe("the state dir's mode is the umask's", () => {
  it("the first CLI command creates the state dir 0700 and its files (database, config cache) 0600", () => {
    const stateDir = path.join(tmp, "state");
    const config = path.join(tmp, "loopgate.json");
    const script = path.join(root, "test", "fixtures", "gateway", "reply.script.json5");
    fs.writeFileSync(
      config,
      JSON.stringify({
        agents: { defaults: { model: { primary: "s/m" }, workspace: path.join(tmp, "ws") } },
        // the cached config carries provider keys like this one
        models: {
          providers: { s: { api: "scripted", script, apiKey: "sk-secret-for-test-0001", models: [{ id: "m" }] } },
        },
      }),
    );
    // `sh -c 'umask 022; exec ...'` gives the child the umask a desktop session usually has
    const r = spawnSync(
      "sh",
      [
        "-c",
        `umask 022; exec "$0" "$@"`,
        process.execPath,
        cli,
        "agent",
        "--local",
        "--message",
        "hi",
        "--config",
        config,
      ],
      {
        env: { ...process.env, LOOPGATE_STATE_DIR: stateDir, HOME: tmp, NO_COLOR: "1" },
        encoding: "utf8",
      },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(fs.statSync(stateDir).mode & 0o777).toBe(0o700);
    const entries = modes(stateDir);
    expect(entries.length).toBeGreaterThan(0);
    // Directories inside are out of reach once the state dir is 0700; Node's compile cache (V8 code for our own
    // modules, nothing secret) keeps its own modes. Every file of ours is 0600.
    const files = entries.filter(
      ([n]) => !n.startsWith(path.join("cache", "compile")) && fs.statSync(path.join(stateDir, n)).isFile(),
    );
    expect(files.map(([n]) => n)).toEqual(expect.arrayContaining(["loopgate.sqlite"]));
    expect(files.some(([n]) => n.startsWith(path.join("cache", "config-")))).toBe(true);
    for (const [name, mode] of files) expect([name, mode.toString(8)]).toEqual([name, "600"]);
  });
});
