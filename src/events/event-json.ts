/**
 * An agent event's wire JSON, made once per event. The gateway's broadcaster serializes every event for its
 * clients; the event store writer needs the same text a moment later. Keyed weakly by the event object, so the
 * text lives exactly as long as the event does and a process without a broadcaster (the CLI) just makes it here.
 */
import type { AgentEvent } from "../protocol/agent-events.js";

const made = new WeakMap<AgentEvent, string>();

export function agentEventJson(event: AgentEvent): string {
  let json = made.get(event);
  if (json === undefined) {
    json = JSON.stringify(event);
    made.set(event, json);
  }
  return json;
}
