/** Public API for embedding Loopgate in an application or testing against it. */

export { type LoopEvent, type LoopOutcome, type LoopPorts, runAgentLoop } from "./agent/loop.js";
export { isSilentReply, shapeReply } from "./agent/reply.js";
export { AgentRuntime, type RuntimeOptions } from "./agent/runtime.js";
export { type AcceptedRun, type AgentFinal, type AgentRequest, AgentService, type Receipt } from "./agent/service.js";
export { GatewayClient, GatewayRequestError } from "./client/index.js";
export { ConfigError, type LoopgateConfig, loadConfig, parseConfig } from "./config/index.js";
export { type GatewayHandle, type GatewayOptions, startGateway } from "./gateway/server.js";
export { type AgentEvent, AgentEventBus } from "./infra/events.js";
export { type Backend, createStore, openBackend } from "./node/backend.js";
export { type ComposeNodeOptions, composeNode, type LoopgateNode, type NodeRole } from "./node/compose.js";
export { createScriptedProvider, type Script, ScriptedProvider, type ScriptedTurn } from "./providers/scripted.js";
export type { ChatMessage, ModelProvider, ModelRequest, ModelStreamEvent, Usage } from "./providers/types.js";
export { openStore, SqliteStore } from "./storage/sqlite-store.js";
export type { Store } from "./storage/types.js";
export type { Tool, ToolContext, ToolOutput } from "./tools/types.js";
