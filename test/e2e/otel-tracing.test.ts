/*
 * The documented OpenTelemetry setup, as a user runs it (docs/observability.md): `loopgate gateway` as a real child
 * process with examples/otel-tracing.mjs preloaded through NODE_OPTIONS, exporting OTLP/HTTP to a collector, here a
 * loopback HTTP server that keeps what it receives. A run goes through the gateway; on SIGTERM the gateway drains,
 * flushes the SDK and exits, and the collector has the run's spans.
 */
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { cliSandbox, root, useCliSandboxes } from "../fixtures/cli/sandbox.js";

useCliSandboxes();

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Array<{ key: string; value: { stringValue?: string; intValue?: string | number } }>;
}
interface OtlpExport {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: { stringValue?: string } }> };
    scopeSpans?: Array<{ scope?: { name?: string }; spans?: OtlpSpan[] }>;
  }>;
}

/** A stand-in OTLP/HTTP collector: keeps every export it is sent on /v1/traces and answers 200. */
async function startCollector() {
  const exports: OtlpExport[] = [];
  const contentTypes: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/v1/traces") {
        contentTypes.push(String(req.headers["content-type"]));
        exports.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as OtlpExport);
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, exports, contentTypes, close: () => server.close() };
}

const collectors: Array<{ close(): void }> = [];
afterAll(() => {
  for (const c of collectors) c.close();
});

describe("OpenTelemetry through the documented preload", () => {
  it("a gateway started with examples/otel-tracing.mjs exports the run's spans over OTLP/HTTP, flushed at exit", async () => {
    const collector = await startCollector();
    collectors.push(collector);
    const s = cliSandbox({ prefix: "otel" });
    const preload = pathToFileURL(path.join(root, "examples", "otel-tracing.mjs")).href;
    const gw = await s.gateway(["--port", "0"], {
      NODE_OPTIONS: `--import=${preload}`,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
    });
    const run = await s.agent(["--message", "hi", "--url", gw.url]).done;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("Hello from the gateway.");

    gw.child.kill("SIGTERM");
    const stopped = await gw.done;
    expect(stopped.code, stopped.stderr).toBe(0);

    const resourceSpans = collector.exports.flatMap((e) => e.resourceSpans ?? []);
    const spans = resourceSpans.flatMap((r) => (r.scopeSpans ?? []).flatMap((sc) => sc.spans ?? []));
    expect(collector.contentTypes.every((t) => t.startsWith("application/json"))).toBe(true);
    expect(spans.map((x) => x.name).sort()).toEqual(["attempt s/m", "chat m", "invoke_agent main"]);
    const byName = new Map(spans.map((x) => [x.name, x]));
    const runSpan = byName.get("invoke_agent main")!;
    expect(byName.get("attempt s/m")?.parentSpanId).toBe(runSpan.spanId);
    expect(byName.get("chat m")?.parentSpanId).toBe(byName.get("attempt s/m")?.spanId);
    expect(new Set(spans.map((x) => x.traceId)).size).toBe(1);
    const service = resourceSpans[0].resource?.attributes?.find((a) => a.key === "service.name");
    expect(service?.value.stringValue).toBe("loopgate");
    const scopes = resourceSpans.flatMap((r) => (r.scopeSpans ?? []).map((sc) => sc.scope?.name));
    expect(new Set(scopes)).toEqual(new Set(["loopgate"]));
  });
});
