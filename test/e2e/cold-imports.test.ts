/*
 * The cold CLI imports only what the invocation needs (issue 34): a process whose tools are all declared in zod (the
 * built-ins, `loopgate agent --local` without MCP servers or plugins) never loads ajv, which validates only
 * JSON-Schema-only tools (plugin and MCP tools); the first such tool loads it. A one-shot `agent --local` turn against
 * an http: model, with a plain-JSON config, no Postgres, MCP servers, plugins or compaction, loads none of their
 * modules. The bin is bundled (~110 files for ~400 modules; `dist/cli/bin-modules.json` says which file holds which
 * module), so a module counts as loaded when the file holding it was. Run against the built dist/ in child
 * processes, so the module cache is that process's own and nothing vitest loaded counts.
 */
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { startGateway } from "../../src/gateway/server.js";
import { silentLogger } from "../../src/infra/logger.js";
import { type FakeModelServer, startFakeModelServer } from "../../src/testing/fake-model-server.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const validate = path.join(root, "dist/tools/validate.js");
const builtins = path.join(root, "dist/tools/builtin.js");
const cli = path.join(root, "dist/cli/main.js");
const recorder = path.join(root, "test/fixtures/cold-imports/record-modules.mjs");
/** The bundled bin's files and the dist/ modules each holds, as `npm run build` wrote them. */
const bundled = JSON.parse(fs.readFileSync(path.join(root, "dist/cli/bin-modules.json"), "utf8")) as Record<
  string,
  string[]
>;

/** Runs `body` as an ES module in a fresh node and returns what it printed as JSON. */
function inChild(body: string): Record<string, unknown> {
  const script = `import { createRequire } from "node:module";
const ajvLoaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes("/node_modules/ajv/"));
${body}`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 60_000 });
  expect(r.stderr).toBe("");
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

it("ajv-loaded-only-for-json-schema-tools: zod-declared tools are checked without loading ajv; the first JSON-Schema-only tool loads it", () => {
  const out = inChild(`
const { checkToolArgs, prepareToolValidation } = await import(${JSON.stringify(validate)});
const { createBuiltinTools } = await import(${JSON.stringify(builtins)});
const read = createBuiltinTools({}).find((t) => t.name === "read");
const zodCheck = checkToolArgs(read, { path: "README.md" });
const afterZod = ajvLoaded();
const plugin = { name: "lookup", description: "", parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] } };
prepareToolValidation(plugin);
const refused = checkToolArgs(plugin, {});
console.log(JSON.stringify({ zodOk: zodCheck.ok, afterZod, afterJsonSchema: ajvLoaded(), refused }));`);
  expect(out.zodOk).toBe(true);
  expect(out.afterZod).toBe(false);
  expect(out.afterJsonSchema).toBe(true);
  expect(out.refused).toEqual({ ok: false, error: "invalid arguments for lookup: word: is required" });
});

let model: FakeModelServer;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-cold-imports-"));
beforeAll(async () => {
  // the bench's turn: the first call asks for `read`, the call after the tool result answers
  model = await startFakeModelServer({
    respond: (req) => {
      const messages = (req.body.messages ?? []) as { role: string }[];
      return messages.at(-1)?.role === "tool"
        ? { text: "Done." }
        : { toolCalls: [{ name: "read", arguments: { path: "notes.txt" } }] };
    },
  });
});
afterAll(async () => {
  await model?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** The config of every recorded turn: the fake model, through the real openai-completions provider. */
const fakeModelConfig = () => ({
  models: {
    providers: {
      fake: { api: "openai-completions", baseUrl: model.baseUrl, apiKey: "x", models: [{ id: "fake-model" }] },
    },
  },
  agents: { defaults: { model: { primary: "fake/fake-model" } } },
});

/** One `loopgate agent --local` turn under the recorder: its exit, output, and the modules it loaded. */
async function recordedLocalTurn(
  name: string,
  configText?: (plain: string) => string,
  extraEnv: Record<string, string> = {},
) {
  return recordedTurn(name, ["--local"], configText, extraEnv);
}

/** One `loopgate agent <how>` turn under the recorder: its exit, output, and the modules it loaded. */
async function recordedTurn(
  name: string,
  how: string[],
  configText?: (plain: string) => string,
  extraEnv: Record<string, string> = {},
) {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir, { recursive: true });
  const configPath = path.join(dir, "loopgate.json5");
  const plain = JSON.stringify(fakeModelConfig(), null, 2);
  fs.writeFileSync(configPath, configText ? configText(plain) : plain);
  const out = path.join(dir, "modules.json");
  const env = { ...process.env, LOOPGATE_STATE_DIR: dir, NO_COLOR: "1", LOOPGATE_RECORD_MODULES_OUT: out, ...extraEnv };
  const args = ["--import", recorder, cli, "agent", ...how, "-m", "hello", "--config", configPath, "-s", name];
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolve, reject) => {
      const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
      child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
      child.on("error", reject);
      child.on("close", (c) => resolve({ code: c, stdout, stderr }));
    },
  );
  const loaded = JSON.parse(fs.readFileSync(out, "utf8")) as {
    files: string[];
    builtins: string[];
    flagCalls: { flags: string; builtinsLoaded: number }[];
  };
  const loadedFiles = loaded.files.map((u) => path.relative(root, fileURLToPath(u)).replace(/^.*node_modules\//, ""));
  // the bin is a bundle (scripts/bundle-cli.mjs): each of its files stands for the dist/ modules it holds
  const files = loadedFiles.flatMap((f) => (f.startsWith("dist/cli/") && bundled[path.basename(f)]) || [f]);
  return { code, stdout, stderr, loadedFiles, files, builtins: loaded.builtins, flagCalls: loaded.flagCalls };
}

it("one-shot-local-turn-loads-no-unused-feature: agent --local against an http: model with a plain-JSON config loads no Postgres bus or relay, MCP starter, plugin loader, compaction, json5, node:https, node:zlib or undici", async () => {
  const turn = await recordedLocalTurn("plain");
  expect(turn.code, turn.stderr).toBe(0);
  expect(turn.stdout).toContain("Done.");
  // the recorder saw the CLI's own modules: an empty list would pass every check below
  expect(turn.files).toContain("dist/node/compose.js");
  // and it loaded them from the bundle: no module of ours on its own, each one a file to resolve, read and compile
  expect(turn.loadedFiles.filter((f) => f.startsWith("dist/") && !(path.basename(f) in bundled))).toEqual([]);
  expect(turn.builtins).toContain("http");
  const unused = [
    "dist/events/pg-bus.js",
    "dist/events/pg-session-relay.js",
    "dist/limits/spend-relay.js",
    "dist/storage/postgres/transient-errors.js",
    "dist/tools/mcp/start.js",
    "dist/hooks/plugins.js",
    "dist/agent/run/compaction.js",
  ];
  expect(turn.files.filter((f) => unused.includes(f))).toEqual([]);
  expect(turn.files.filter((f) => f.startsWith("json5/"))).toEqual([]);
  // an ES import of node:http alone loads undici and zlib (its lazy WebSocket getters): the wire client must not
  expect(turn.builtins.filter((b) => b === "https" || b === "zlib" || b.includes("undici"))).toEqual([]);
}, 90_000);

it("one-shot-local-turn-skips-unused-builtins: agent --local loads no worker_threads, util diff or webcrypto (an ES import of node:util or node:crypto would, for their lazy exports), nor child_process when nothing is spawned", async () => {
  const turn = await recordedLocalTurn("facades");
  expect(turn.code, turn.stderr).toBe(0);
  expect(turn.stdout).toContain("Done.");
  // the turn did use both modules, through getBuiltinModule (scripts/builtin-imports.mjs rewrote the bin's imports)
  expect(turn.builtins).toEqual(expect.arrayContaining(["util", "crypto"]));
  const notNeeded = ["worker_threads", "internal/util/diff", "internal/crypto/webcrypto", "child_process"];
  expect(turn.builtins.filter((b) => notNeeded.includes(b))).toEqual([]);
}, 90_000);

it("one-shot-local-turn-compiles-its-modules-whole: agent --local imports the turn's modules with lazy compilation off (so the compile cache keeps their functions), loads no node built-in meanwhile (its shipped code cache would be refused), and turns lazy compilation back on before the turn", async () => {
  // twice: the first run writes the compile cache, the second reads it; both must take the same path
  for (const run of ["first", "second"]) {
    const turn = await recordedLocalTurn("eager");
    expect(turn.code, `${run}: ${turn.stderr}`).toBe(0);
    expect(turn.stdout).toContain("Done.");
    expect(turn.flagCalls.map((c) => c.flags)).toEqual(["--no-lazy", "--lazy"]);
    const [off, on] = turn.flagCalls.map((c) => c.builtinsLoaded);
    expect(turn.builtins.slice(off, on)).toEqual([]);
    // the built-ins the turn needs after the window did load (an empty record would pass the check above)
    expect(turn.builtins.length).toBeGreaterThan(on ?? Infinity);
  }
}, 90_000);

it("local-turn-without-compile-cache-compiles-lazily: with NODE_DISABLE_COMPILE_CACHE, agent --local leaves V8's lazy compilation alone (whole modules compiled each run would be kept nowhere)", async () => {
  const turn = await recordedLocalTurn("no-cache", undefined, { NODE_DISABLE_COMPILE_CACHE: "1" });
  expect(turn.code, turn.stderr).toBe(0);
  expect(turn.stdout).toContain("Done.");
  expect(turn.flagCalls).toEqual([]);
}, 90_000);

it("remote-turn-loads-no-builtin-beyond-the-wire: agent --url through a running gateway loads no child_process, worker_threads, util diff or webcrypto (commander's spawn and the built-ins' ES facades)", async () => {
  const gw = await startGateway({
    config: parseConfig(fakeModelConfig()),
    stateDir: path.join(tmp, "gateway"),
    port: 0,
    logger: silentLogger,
  });
  try {
    const turn = await recordedTurn("remote", ["--url", gw.url]);
    expect(turn.code, turn.stderr).toBe(0);
    expect(turn.stdout).toContain("Done.");
    // the recorder saw the remote client: an empty list would pass the check below
    expect(turn.files).toContain("dist/cli/agent-remote.js");
    const notNeeded = ["child_process", "worker_threads", "internal/util/diff", "internal/crypto/webcrypto"];
    expect(turn.builtins.filter((b) => notNeeded.includes(b))).toEqual([]);
  } finally {
    await gw.close();
  }
}, 90_000);

it("json5-config-still-loads: a config with comments and trailing commas runs the same turn, loading json5 for it", async () => {
  const turn = await recordedLocalTurn("json5", (plain) => `// written by hand\n${plain.replace(/\n}\s*$/, ",\n}\n")}`);
  expect(turn.code, turn.stderr).toBe(0);
  expect(turn.stdout).toContain("Done.");
  expect(turn.files.some((f) => f.startsWith("json5/"))).toBe(true);
}, 90_000);

it("one-shot-local-turn-loads-no-zod-from-a-cached-config: agent --local whose config comes from the cache, calling a built-in tool with valid arguments, loads neither zod nor the built-ins' zod schemas", async () => {
  const zodFiles = (files: string[]) => files.filter((f) => f.includes("zod/") || f === "dist/tools/builtin-args.js");
  // the first turn validates the config with the schema (zod), and caches it
  const first = await recordedLocalTurn("zod-cached");
  expect(first.code, first.stderr).toBe(0);
  expect(zodFiles(first.files)).not.toEqual([]);
  const turn = await recordedLocalTurn("zod-cached");
  expect(turn.code, turn.stderr).toBe(0);
  expect(turn.stdout).toContain("Done.");
  // the model's first call asked for `read`: its arguments were checked, without zod
  expect(turn.stderr).toContain("read");
  expect(zodFiles(turn.files)).toEqual([]);
}, 90_000);
