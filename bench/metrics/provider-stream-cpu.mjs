// CPU per token of the Chat Completions provider alone (node:http read, SSE, chunk JSON, the stream's events), with
// no gateway, store or sockets to clients around it, so that a change to the per-chunk path can be told apart on a
// busy machine where the whole stream level (`--only=stream`) moves ±15 % from run to run.
// A model process writes `n` streams of `tokens` chunks, 2 chunks per write every 4 ms per stream (the same writes
// whatever the reader does); this process reads them through the provider on a 40 ms stream beat, as a run does, and
// reports its own CPU (user + system) per token. Runs under the gateway's V8 flags.
//   node bench/metrics/provider-stream-cpu.mjs [distDir=dist] [n=50] [tokens=2000]     (needs `npm run build`)
// Compare two trees by alternating them: node … /work/before/dist, node … dist, and so on.
import { spawn } from "node:child_process";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT_DIR } from "../lib/child.mjs";

const HEAD =
  '{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1733600000,"model":"fake-model","choices":';

function serveModel(tokens) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      let i = 0;
      const timer = setInterval(() => {
        let out = "";
        for (let k = 0; k < 2 && i < tokens; k++, i++) {
          out += `data: ${HEAD}[{"index":0,"delta":{"content":" t${i.toString(36)}x"},"logprobs":null,"finish_reason":null}],"usage":null}\n\n`;
        }
        if (i < tokens) {
          res.write(out);
          return;
        }
        clearInterval(timer);
        res.end(
          `${out}data: ${HEAD}[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}\n\ndata: [DONE]\n\n`,
        );
      }, 4);
    });
  });
  server.listen(0, "127.0.0.1", () => process.stdout.write(`${server.address().port}\n`));
}

async function measure(distDir, n, tokens) {
  const dist = (file) => pathToFileURL(path.resolve(ROOT_DIR, distDir, file)).href;
  const { createOpenAICompletionsProvider } = await import(dist("providers/openai-completions.js"));
  const { Cadence } = await import(dist("infra/cadence.js"));
  const { systemClock } = await import(dist("infra/clock.js"));
  const { GATEWAY_NODE_FLAGS } = await import(dist("cli/gateway-flags.js"));
  if (!GATEWAY_NODE_FLAGS.every((f) => process.execArgv.includes(f))) {
    // the gateway's flags (the young generation's size sets how often the collector runs per token)
    const again = spawn(process.execPath, [...GATEWAY_NODE_FLAGS, ...process.argv.slice(1)], { stdio: "inherit" });
    again.on("exit", (code) => process.exit(code ?? 1));
    return;
  }
  const model = spawn(process.execPath, [process.argv[1], "--model", String(tokens)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    const port = await new Promise((resolve) => model.stdout.once("data", (d) => resolve(String(d).trim())));
    const provider = createOpenAICompletionsProvider({
      id: "bench",
      api: "openai-completions",
      baseUrl: `http://127.0.0.1:${port}/v1`,
      apiKey: "bench",
      models: [],
    });
    const beat = new Cadence(systemClock, 40);
    const stream = async (i) => {
      const request = {
        model: "fake-model",
        system: "",
        messages: [{ role: "user", content: "hi" }],
        tools: [],
        signal: new AbortController().signal,
        streamBeat: beat.lane(`run-${i}`),
      };
      let chars = 0;
      for await (const ev of provider.stream(request)) if (ev.type === "text_delta") chars += ev.delta.length;
      return chars;
    };
    // warm-up: the code optimized before the measured streams
    await Promise.all(Array.from({ length: 4 }, (_, i) => stream(i)));
    const before = process.cpuUsage();
    const started = performance.now();
    await Promise.all(Array.from({ length: n }, (_, i) => stream(i)));
    const cpu = process.cpuUsage(before);
    const count = n * tokens;
    process.stdout.write(
      `${distDir} n=${n} × ${tokens}: ${((cpu.user + cpu.system) / count).toFixed(2)} µs/token ` +
        `(user ${(cpu.user / count).toFixed(2)}), ${(performance.now() - started).toFixed(0)} ms\n`,
    );
  } finally {
    model.kill();
  }
}

const args = process.argv.slice(2);
if (args[0] === "--model") serveModel(Number(args[1]));
else await measure(args[0] ?? "dist", Number(args[1] ?? 50), Number(args[2] ?? 2000));
