// CPU of building one Chat Completions request body (providers/openai-completions.ts requestBody) for a warm turn's
// second call with the 5 built-in tools, against the same body without tools and the tools' JSON serialised afresh:
// what caching the tools' JSON per process saves per model call. In-process, process.cpuUsage; needs npm run build.
//   node bench/metrics/request-body.mjs
import { requestBody } from "../../dist/providers/openai-completions.js";
import { createBuiltinTools } from "../../dist/tools/builtin.js";

const tools = createBuiltinTools().map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
const messages = [];
for (let i = 0; i < 10; i++) {
  messages.push({ role: "user", content: `hello ${i}` });
  messages.push({
    role: "assistant",
    content: [{ type: "text", text: "Hi there, how can I help you today? ".repeat(3) }],
  });
}
messages.push({ role: "user", content: "hello" });
const req = {
  model: "fake-model",
  system: "You are a helpful assistant. ".repeat(40),
  messages,
  tools,
  maxTokens: 1024,
  signal: new AbortController().signal,
};
const noTools = { ...req, tools: [] };
// what the tools cost when serialised on every call, as the body was built before
const toolsAfresh = () =>
  JSON.stringify(
    tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.parameters },
    })),
  );

function cpuUsPerCall(fn, n) {
  for (let i = 0; i < 2000; i++) fn();
  const c = process.cpuUsage();
  for (let i = 0; i < n; i++) fn();
  const d = process.cpuUsage(c);
  return (d.user + d.system) / n;
}

console.log(`body ${requestBody(req).length} bytes, of which tools ${toolsAfresh().length}`);
for (let r = 0; r < 5; r++) {
  const withTools = cpuUsPerCall(() => requestBody(req), 20_000);
  const without = cpuUsPerCall(() => requestBody(noTools), 20_000);
  const afresh = cpuUsPerCall(toolsAfresh, 20_000);
  console.log(
    `round ${r + 1}: body ${withTools.toFixed(2)} us, without tools ${without.toFixed(2)} us, tools serialised afresh ${afresh.toFixed(2)} us`,
  );
}
