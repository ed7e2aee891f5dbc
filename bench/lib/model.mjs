// The benchmark's model: every turn is exactly two model calls. The first asks for one tool call, the second
// (the request whose last message is the tool result) answers a short text. Stateless, so one fake server
// serves every session, process and client of a run.
import fs from "node:fs";
import path from "node:path";

/** The tiny file the CLI benchmarks make the model `read` (the CLI cannot be given the `noop` tool). */
export const TINY_FILE = "bench-tiny.txt";
export const TINY_TEXT = "tiny\n";
export const FINAL_TEXT = "Done.";
export const MODEL_REF = "fake/fake-model";

/** The `respond` function for startFakeModelServer (Chat Completions bodies). */
export function benchRespond(request) {
  const messages = Array.isArray(request.body.messages) ? request.body.messages : [];
  const last = messages[messages.length - 1];
  if (last && last.role === "tool") return { text: FINAL_TEXT };
  const tools = Array.isArray(request.body.tools) ? request.body.tools : [];
  const offersNoop = tools.some((t) => t?.function?.name === "noop");
  return offersNoop
    ? { toolCalls: [{ name: "noop", arguments: {} }] }
    : { toolCalls: [{ name: "read", arguments: { path: TINY_FILE } }] };
}

/** The no-op tool: what the benchmark's model calls on the first model call of every turn. */
export const noopTool = {
  name: "noop",
  description: "Does nothing and answers ok.",
  parameters: { type: "object", properties: {}, additionalProperties: false },
  concurrency: "parallel",
  execute: async () => ({ content: "ok" }),
};

/** Loopgate config (plain object) that reaches the fake server through the real openai-completions provider. */
export function benchConfig(baseUrl, extra = {}) {
  return {
    ...extra,
    models: {
      providers: {
        fake: { api: "openai-completions", baseUrl, apiKey: "x", models: [{ id: "fake-model" }] },
      },
    },
    agents: { defaults: { model: { primary: MODEL_REF } } },
  };
}

/**
 * A state dir with a config file and a workspace that holds the tiny file. The workspace gets Loopgate's own
 * starter files first (a brand-new workspace would), so the system prompt is the one a real first user sends.
 */
export async function prepareStateDir(dir, baseUrl, extra = {}) {
  fs.mkdirSync(dir, { recursive: true });
  const configPath = path.join(dir, "loopgate.json5");
  fs.writeFileSync(configPath, JSON.stringify(benchConfig(baseUrl, extra), null, 2));
  const { ensureWorkspace } = await import("../../dist/prompt/workspace.js");
  const ws = await ensureWorkspace(path.join(dir, "workspace"));
  fs.writeFileSync(path.join(ws.dir, TINY_FILE), TINY_TEXT);
  return { configPath, workspaceDir: ws.dir };
}
