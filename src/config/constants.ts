/** Enumerations shared by the schema and the CLI; kept apart so the CLI can use them without loading zod. */
export const thinkingLevels = ["off", "minimal", "low", "medium", "high"] as const;
export const queueModes = ["steer", "followup", "collect", "interrupt"] as const;
export const dropPolicies = ["summarize", "old", "new"] as const;
export const apiKinds = ["openai-completions", "openai-responses", "anthropic-messages", "scripted"] as const;
