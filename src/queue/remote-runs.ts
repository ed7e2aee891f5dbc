import type { EventBusPort } from "../events/bus-port.js";
import type { Clock } from "../infra/clock.js";
import type { RunRecord, Store } from "../storage/types.js";
import { RunNotFoundError } from "./errors.js";

/**
 * A run that is not live in this process but whose record is still queued or running: with gateway nodes on one
 * Postgres (`bus.spansNodes`) it runs on another node, and its end is heard through the bus (the end notice goes out
 * once its record is final). Waits until then, or until `timeoutMs` passes, and answers with the record as it is.
 *
 * The end listener is registered before the record is read, so an end between the read and the wait is not missed.
 */
export async function recordWhenEnded(
  deps: { store: Store; bus: EventBusPort; clock: Clock },
  runId: string,
  timeoutMs?: number,
): Promise<RunRecord> {
  const { store, bus, clock } = deps;
  let stop = () => {};
  const ended = new Promise<void>((resolve) => {
    stop = bus.onRunEnd(runId, resolve);
  });
  let timer: unknown;
  try {
    const run = await store.getRun(runId);
    if (!run) throw new RunNotFoundError(runId);
    if (run.status !== "queued" && run.status !== "running") return run;
    const waits: Array<Promise<void>> = [ended];
    if (timeoutMs !== undefined) {
      waits.push(
        new Promise<void>((resolve) => {
          timer = clock.setTimeout(resolve, Math.max(0, timeoutMs));
        }),
      );
    }
    await Promise.race(waits);
    return (await store.getRun(runId)) ?? run;
  } finally {
    stop();
    if (timer !== undefined) clock.clearTimeout(timer);
  }
}
