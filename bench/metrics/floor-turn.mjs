// Floor (a): the least work one turn can take. A bare client makes the same two streamed Chat Completions calls
// per turn against the same fake model process, parses the SSE body, and runs the same tool in between, with no
// gateway, storage, events, prompt building or SDK. Options: { baseUrl, turns, warmup, concurrency, tool }.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { childOptions, emitResult } from "../lib/child.mjs";
import { startProfile } from "../lib/inspector-profile.mjs";
import { FINAL_TEXT, noopTool, TINY_FILE, TINY_TEXT } from "../lib/model.mjs";
import { nowMs, summarize } from "../lib/stats.mjs";

const opts = childOptions();
const url = `${opts.baseUrl}/chat/completions`;
const system = "You are a benchmark agent. ".repeat(80);
const toolName = opts.tool === "read" ? "read" : "noop";
const tools = [
  {
    type: "function",
    function: { name: toolName, description: "bench tool", parameters: { type: "object", properties: {} } },
  },
];

const dir = await fs.mkdtemp(path.join(os.tmpdir(), "loopgate-floor-"));
const tinyPath = path.join(dir, TINY_FILE);
await fs.writeFile(tinyPath, TINY_TEXT);
const runTool = toolName === "read" ? () => fs.readFile(tinyPath, "utf8") : () => noopTool.execute({}, {});

/** One streamed call: POST, then read the SSE body and fold the deltas into text and tool calls. */
async function call(messages) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer x" },
    body: JSON.stringify({
      model: "fake-model",
      messages,
      tools,
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  if (!res.ok) throw new Error(`fake model answered ${res.status}`);
  const decoder = new TextDecoder();
  let buffered = "";
  let text = "";
  const calls = [];
  for await (const chunk of res.body) {
    buffered += decoder.decode(chunk, { stream: true });
    let end = buffered.indexOf("\n\n");
    while (end >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      end = buffered.indexOf("\n\n");
      if (!event.startsWith("data: ")) continue;
      const data = event.slice(6);
      if (data === "[DONE]") continue;
      const delta = JSON.parse(data).choices?.[0]?.delta;
      if (!delta) continue;
      if (delta.content) text += delta.content;
      for (const part of delta.tool_calls ?? []) {
        calls[part.index] ??= { id: part.id, name: "", args: "" };
        if (part.function?.name) calls[part.index].name = part.function.name;
        if (part.function?.arguments) calls[part.index].args += part.function.arguments;
      }
    }
  }
  return { text, calls };
}

async function turn() {
  const messages = [
    { role: "system", content: system },
    { role: "user", content: "hello" },
  ];
  const first = await call(messages);
  const c = first.calls[0];
  if (!c || c.name !== toolName) throw new Error(`expected a ${toolName} call, got ${JSON.stringify(first)}`);
  const result = await runTool(JSON.parse(c.args || "{}"));
  messages.push(
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: c.id, type: "function", function: { name: c.name, arguments: c.args } }],
    },
    { role: "tool", tool_call_id: c.id, content: typeof result === "string" ? result : result.content },
  );
  const second = await call(messages);
  if (second.text !== FINAL_TEXT) throw new Error(`unexpected final text ${JSON.stringify(second.text)}`);
}

for (let i = 0; i < (opts.warmup ?? 50); i++) await turn();

// profile: a .cpuprofile path; only the measured turns are profiled
const stopProfile = await startProfile(opts.profile);
const samples = [];
const cpu0 = process.cpuUsage();
for (let i = 0; i < (opts.turns ?? 200); i++) {
  const t0 = nowMs();
  await turn();
  samples.push(nowMs() - t0);
}

const cpu = process.cpuUsage(cpu0);
await stopProfile();
const cpuMsPerTurn = (cpu.user + cpu.system) / 1000 / samples.length;

// The same loop, `concurrency` clients at once: the floor for the throughput figures.
const concurrency = opts.concurrency ?? 8;
const perClient = opts.concurrentTurns ?? 20;
const t0 = nowMs();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    for (let i = 0; i < perClient; i++) await turn();
  }),
);
const throughput = (concurrency * perClient) / ((nowMs() - t0) / 1000);

await fs.rm(dir, { recursive: true, force: true });
emitResult({ turnMs: summarize(samples), cpuMsPerTurn, throughput, concurrency, perClient });
