// Where an embedded turn's time goes. A CPU profile cannot show time spent waiting (fsync, the libuv thread pool),
// so this times, in one warm process with the same state dir, each piece of work a turn does on its own, as the
// runner calls it, and compares the sum with a whole turn measured in the same process:
//   write lock      acquireSessionWriteLock + release on the session's lock path
//   bootstrap       loadBootstrapFiles(workspace)  (re-read on every turn)
//   system prompt   buildSystemPrompt with the same inputs
//   store           the store calls of one turn (run record, session, transcript read and four appends)
//   model calls     the two provider.stream calls through the real openai-completions provider (node:http + SSE)
//   noop tool       the tool itself
// Options: { baseUrl, iterations }.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseConfig } from "../../dist/config/index.js";
import { createLogger } from "../../dist/infra/logger.js";
import { composeSqliteNode } from "../../dist/node/compose.js";
import { loadBootstrapFiles } from "../../dist/prompt/bootstrap.js";
import { buildSystemPrompt } from "../../dist/prompt/system-prompt.js";
import { acquireSessionWriteLock } from "../../dist/session/write-lock.js";
import { SqliteStoreAdapter } from "../../dist/storage/sqlite-adapter.js";
import { openStore } from "../../dist/storage/sqlite-store.js";
import { childOptions, emitResult } from "../lib/child.mjs";
import { benchConfig, noopTool } from "../lib/model.mjs";
import { median, nowMs } from "../lib/stats.mjs";

const opts = childOptions();
const iterations = opts.iterations ?? 100;
const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-bench-breakdown-"));
// the engine, timed directly below (storeCalls); the node gets the Store port over it, as openBackend gives
const store = openStore(stateDir);
const node = composeSqliteNode({
  role: "bench",
  config: parseConfig(benchConfig(opts.baseUrl)),
  stateDir,
  store: new SqliteStoreAdapter(store),
  logger: createLogger(),
  tools: [noopTool],
});
const { runtime: rt, service } = node;

let n = 0;
async function wholeTurn() {
  const a = await service.accept({ message: "hello", idempotencyKey: `bd-${n++}`, sessionKey: `bd-${n % 10}` });
  const f = await service.final(a.runId);
  if (f.status !== "ok") throw new Error(JSON.stringify(f));
}
for (let i = 0; i < 30; i++) await wholeTurn();

const workspace = await rt.workspaceFor("main");
const provider = await rt.getProvider("fake");
const toolSpecs = [...rt.tools.values()].map((t) => ({
  name: t.name,
  description: t.description,
  parameters: t.parameters,
}));
const sessionKey = "agent:main:bd-1";
const history = store.readTranscript(sessionKey, { kinds: ["message"] }).map((r) => r.message);

async function time(fn) {
  const samples = [];
  for (let i = 0; i < iterations; i++) {
    const t0 = nowMs();
    await fn(i);
    samples.push(nowMs() - t0);
  }
  return median(samples);
}

async function drain(stream) {
  const events = [];
  for await (const ev of stream) events.push(ev);
  return events;
}

const system = buildSystemPrompt({
  mode: "full",
  agentId: "main",
  workspaceDir: workspace.dir,
  tools: toolSpecs,
  bootstrapFiles: await loadBootstrapFiles(workspace.dir),
  now: new Date(),
  runContext: { sessionKey, model: "fake/fake-model" },
});

const pieces = {};
pieces.wholeTurn = await time(() => wholeTurn());
pieces.writeLock = await time(async () => {
  const h = await acquireSessionWriteLock(rt.sessionLockPath(sessionKey), { acquireTimeoutMs: 5000 });
  await h.release();
});
pieces.bootstrapFiles = await time(() => loadBootstrapFiles(workspace.dir));
pieces.systemPrompt = await time(() =>
  buildSystemPrompt({
    mode: "full",
    agentId: "main",
    workspaceDir: workspace.dir,
    tools: toolSpecs,
    bootstrapFiles: [],
    now: new Date(),
    runContext: { sessionKey, model: "fake/fake-model" },
  }),
);
let runN = 0;
store.ensureSession("agent:main:bd-store", "main", Date.now());
pieces.storeCalls = await time(() => {
  const runId = `bd-store-${runN++}`;
  const now = Date.now();
  store.getRun(runId);
  store.createRun({ runId, sessionKey, status: "queued", acceptedAt: now, params: { message: "hello" } });
  store.updateRun(runId, { receipt: { kind: "started" } });
  store.ensureSession(sessionKey, "main", now);
  store.updateRun(runId, { status: "running", startedAt: now });
  store.readTranscript(sessionKey, { kinds: ["message"] });
  for (let i = 0; i < 4; i++) {
    store.appendTranscript([
      {
        sessionKey: "agent:main:bd-store",
        kind: "message",
        runId,
        createdAt: now,
        message: history[i % history.length],
      },
    ]);
  }
  store.transaction(() =>
    store.updateRun(runId, { status: "ok", endedAt: now, result: { payloads: [{ text: "Done." }] } }),
  );
});
const first = [...history.slice(0, 1)];
pieces.modelCalls = await time(async () => {
  const signal = new AbortController().signal;
  const ev1 = await drain(provider.stream({ model: "fake-model", system, messages: first, tools: toolSpecs, signal }));
  const call = ev1.find((e) => e.type === "tool_call");
  const messages = [
    ...first,
    { role: "assistant", content: [{ type: "toolCall", id: call.id, name: call.name, arguments: call.arguments }] },
    { role: "toolResult", toolCallId: call.id, toolName: call.name, content: "ok", isError: false },
  ];
  await drain(provider.stream({ model: "fake-model", system, messages, tools: toolSpecs, signal }));
});
pieces.noopTool = await time(() => noopTool.execute({}, {}));

const accounted =
  pieces.writeLock +
  pieces.bootstrapFiles +
  pieces.systemPrompt +
  pieces.storeCalls +
  pieces.modelCalls +
  pieces.noopTool;
// the node writes what its run-event writer holds, then closes the store (node/compose.ts)
await node.close();
fs.rmSync(stateDir, { recursive: true, force: true });
emitResult({
  ms: pieces,
  accountedMs: accounted,
  restMs: pieces.wholeTurn - accounted,
  systemPromptChars: system.length,
});
