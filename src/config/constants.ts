/** Enumerations shared by the schema and the CLI; kept apart so the CLI can use them without loading zod. */
// The two that are also wire values are defined once, in protocol/ (the leaf), and shared from here.
export { queueModes, reasoningLevels, thinkingLevels, verboseLevels } from "../protocol/enums.js";
export const dropPolicies = ["summarize", "old", "new"] as const;
export const apiKinds = ["openai-completions", "openai-responses", "anthropic-messages", "scripted"] as const;
/** tools.exec.security / tools.exec.ask (OpenClaw's values; tools/exec-policy.ts says what they do) */
export const execSecurityModes = ["deny", "allowlist", "full"] as const;
export const execAskModes = ["off", "on-miss", "always"] as const;
