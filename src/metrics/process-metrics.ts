import { collectDefaultMetrics, Registry } from "prom-client";

/**
 * The process's own metrics under their standard names (`process_*`, `nodejs_*`: CPU, resident memory, heap,
 * event-loop delay, GC, handles), so the usual Node.js dashboards read them unchanged. They describe the process,
 * not a gateway, so there is one set per process however many gateways it starts (tests, embedding apps): made on
 * the first gateway with metrics on, never before (the event-loop monitor and GC observer cost a little).
 */
let processRegistry: Registry | undefined;

export function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}
