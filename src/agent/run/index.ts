export { parseSlashCommand } from "./commands.js";
export { errorKind, RunSetupError, RunTimeoutError } from "./errors.js";
export type { RunResult, RunSpec, RunStatus, WireRunOptions } from "./spec.js";
export { runTurn } from "./turn.js";
