/**
 * Whether a tracing SDK is registered, answered without loading `@opentelemetry/api` (about 10 ms of module loading
 * at start that a gateway without tracing should not pay). The API keeps its registrations in one global object,
 * shared by every copy of the API of the same major version, under this well-known symbol; an SDK registers its
 * tracer provider there as `trace`. So "no such entry" means every span would be a no-op, and the run skips tracing
 * entirely: one property read per run, nothing per model call, tool call or token.
 */
const OTEL_API_GLOBAL = Symbol.for("opentelemetry.js.api.1");

/** True when some tracer provider was registered with `@opentelemetry/api` 1.x (`trace.setGlobalTracerProvider`). */
export function tracingRegistered(): boolean {
  const api = (globalThis as Record<symbol, { trace?: unknown } | undefined>)[OTEL_API_GLOBAL];
  return api?.trace !== undefined;
}

/**
 * Exports what the registered SDK still holds (a batch processor waits seconds between exports), bounded by
 * `timeoutMs`. The CLI calls it before it exits; without an SDK it returns at once and loads nothing.
 */
export async function flushTracing(timeoutMs = 2000): Promise<void> {
  if (!tracingRegistered()) return;
  const { trace } = await import("@opentelemetry/api");
  const provider = trace.getTracerProvider() as { getDelegate?: () => unknown };
  const delegate = provider.getDelegate?.() as { forceFlush?: () => Promise<void> } | undefined;
  if (typeof delegate?.forceFlush !== "function") return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    delegate.forceFlush().catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}
