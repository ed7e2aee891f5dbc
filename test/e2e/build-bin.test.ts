/*
 * `npx loopgate` inside a checkout links the checkout into npm's npx cache once and marks `dist/cli/main.js`
 * executable then; a later `npm run build` writes a new main.js, which must carry its run bit itself, or the next
 * `npx loopgate` stops with "Permission denied". The build runs in a temp copy of the checkout (sources, configs, the
 * same node_modules) with its own npm cache, never in this checkout, whose dist/ other test files are using.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { version: string };
const copy = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-build-")));
afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

/** What `npm run build` reads: the sources, the web console, their configs and the bin's bundler (scripts/). */
const BUILD_INPUTS = ["package.json", "tsconfig.json", "tsconfig.build.json", "src", "web", "scripts"];

function run(cmd: string, args: string[]) {
  const env = { ...process.env, npm_config_cache: path.join(copy, ".npm-cache") };
  const r = spawnSync(cmd, args, { cwd: copy, env, encoding: "utf8", timeout: 120_000 });
  return { code: r.status, out: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

it("npx-loopgate-runs-after-second-build", () => {
  for (const entry of BUILD_INPUTS) fs.cpSync(path.join(root, entry), path.join(copy, entry), { recursive: true });
  fs.symlinkSync(fs.realpathSync(path.join(root, "node_modules")), path.join(copy, "node_modules"));
  for (const round of [1, 2]) {
    const build = run("npm", ["run", "build"]);
    expect(build.code, `build ${round}: ${build.out}`).toBe(0);
    const mode = fs.statSync(path.join(copy, "dist", "cli", "main.js")).mode & 0o777;
    const npx = run("npx", ["loopgate", "--version"]);
    console.log(
      `build ${round}: dist/cli/main.js mode ${mode.toString(8)}; npx loopgate --version: exit ${npx.code}: ${npx.out.trim()}`,
    );
    expect(npx.out.trim()).toBe(pkg.version);
    expect(npx.code).toBe(0);
  }
}, 240_000);
