/** The `agent` event as clients receive it (SPEC 11/14); the in-process bus emits exactly this shape. */

export type AgentStream = "lifecycle" | "assistant" | "tool" | "compaction" | "queue";

export interface AgentEvent<D = Record<string, unknown>> {
  runId: string;
  seq: number;
  stream: AgentStream;
  ts: number;
  sessionKey: string;
  data: D;
}
