/** Enumerations shared by the schema and the CLI; kept apart so the CLI can use them without loading zod. */
// The two that are also wire values are defined once, in protocol/ (the leaf), and shared from here.
export { queueModes, reasoningLevels, thinkingLevels, verboseLevels } from "../protocol/enums.js";
export const dropPolicies = ["summarize", "old", "new"] as const;
export const apiKinds = ["openai-completions", "openai-responses", "anthropic-messages", "scripted"] as const;
/** tools.exec.security / tools.exec.ask (OpenClaw's values; tools/exec-policy.ts says what they do) */
export const execSecurityModes = ["deny", "allowlist", "full"] as const;
export const execAskModes = ["off", "on-miss", "always"] as const;
/** tools.allow / tools.deny groups (OpenClaw's names) that name tools Loopgate has; tools/policy.ts expands them */
export const supportedToolGroups = [
  "group:fs",
  "group:runtime",
  "group:messaging",
  "group:openclaw",
  "group:plugins",
] as const;
/** OpenClaw's groups whose tools Loopgate does not have: refused in config rather than quietly matching nothing */
export const unsupportedToolGroups: Readonly<Record<string, string>> = {
  "group:memory": "memory_search, memory_get",
  "group:web": "web_search, web_fetch",
  "group:sessions": "sessions_list, sessions_history, sessions_send, sessions_spawn, session_status",
  "group:ui": "browser, canvas",
  "group:automation": "cron, gateway",
  "group:nodes": "nodes",
};
