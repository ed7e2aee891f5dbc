import { AgentEventBus } from "../infra/events.js";
import { eventBusConformance } from "./bus.conformance.js";

// The in-process bus delivers synchronously: the publisher and the "other node" are the same instance.
eventBusConformance("in-process AgentEventBus", async () => {
  const bus = new AgentEventBus({ now: () => 1 });
  return { bus, peer: bus, settle: async () => {}, close: async () => {} };
});
