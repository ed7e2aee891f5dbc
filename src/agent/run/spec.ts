/**
 * The run spec and the run result are defined once, by the queue that hands runs over and stores their results
 * (queue/types.ts); the run phases use them as they are.
 */

export type { RunStatus } from "../../protocol/agent-events.js";
export type { RunResult, RunSpec, WireRunOptions } from "../../queue/types.js";
