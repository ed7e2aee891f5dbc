// OpenTelemetry for Loopgate: an SDK with the OTLP/HTTP exporter, preloaded before Loopgate starts.
//
//   npm install @opentelemetry/api@^1.10 @opentelemetry/sdk-trace@^3.1 @opentelemetry/resources@^3.1 \
//     @opentelemetry/context-async-hooks@^3.1 @opentelemetry/exporter-trace-otlp-http@^0.301
//   NODE_OPTIONS="--import=$PWD/otel-tracing.mjs" loopgate gateway
//
// Install the packages where this file is (next to loopgate, so there is one copy of @opentelemetry/api) and point
// the exporter at your collector with the standard variables, e.g. OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
// (the default). Loopgate flushes the spans still held here before it exits. See docs/observability.md.
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";

const provider = new TracerProvider({
  resource: resourceFromAttributes({ "service.name": process.env.OTEL_SERVICE_NAME || "loopgate" }),
  spanProcessors: [
    new BatchSpanProcessor({
      // the URL comes from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT when set
      exporter: new OTLPTraceExporter(),
      scheduledDelayMillis: Number(process.env.OTEL_BSP_SCHEDULE_DELAY) || 5000,
    }),
  ],
});

// Loopgate parents its own spans explicitly; the context manager lets spans of other instrumentation (a provider
// SDK's client span, HTTP) nest under the model call or tool call they happen in.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(provider);
