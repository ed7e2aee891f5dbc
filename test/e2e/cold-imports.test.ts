/*
 * The cold CLI imports only what the invocation needs (issue 34): a process whose tools are all declared in zod (the
 * built-ins, `loopgate agent --local` without MCP servers or plugins) never loads ajv, which validates only
 * JSON-Schema-only tools (plugin and MCP tools); the first such tool loads it. Run against the built dist/ in a child
 * process, so the module cache is that process's own and nothing vitest loaded counts.
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const validate = path.join(root, "dist/tools/validate.js");
const builtins = path.join(root, "dist/tools/builtin.js");

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
