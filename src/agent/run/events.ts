import type { EventBusPort } from "../../events/bus-port.js";
import type { AgentEventData, AgentStream } from "../../protocol/agent-events.js";

/** The run's one way to publish: every event of the run goes through here, typed by stream. */
export interface RunEmitter {
  emit<S extends AgentStream>(stream: S, data: AgentEventData[S]): void;
  /** sends what a coalescing emitter holds back (delta-coalescer.ts); the plain emitter holds nothing */
  flush?(): void;
}

export function runEmitter(bus: EventBusPort, runId: string, sessionKey: string): RunEmitter {
  return { emit: (stream, data) => void bus.emit(runId, sessionKey, stream, data) };
}
