/** Public API for embedding Loopgate in an application or testing against it. */
export { AgentRuntime, type RuntimeOptions } from "./agent/runtime.js";
export { AgentService, type AgentRequest, type AgentFinal, type AcceptedRun, type Receipt } from "./agent/service.js";
export { runAgentLoop, type LoopEvent, type LoopOutcome, type LoopPorts } from "./agent/loop.js";
export { shapeReply, isSilentReply } from "./agent/reply.js";
export { loadConfig, parseConfig, ConfigError, type LoopgateConfig } from "./config/index.js";
export { AgentEventBus, type AgentEvent } from "./infra/events.js";
export { SqliteStore, openStore } from "./storage/sqlite-store.js";
export type { Store } from "./storage/types.js";
export { ScriptedProvider, createScriptedProvider, type Script, type ScriptedTurn } from "./providers/scripted.js";
export type { ModelProvider, ModelRequest, ModelStreamEvent, ChatMessage, Usage } from "./providers/types.js";
export type { Tool, ToolContext, ToolOutput } from "./tools/types.js";
