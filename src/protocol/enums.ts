/**
 * Enumerations that appear on the wire. They live here because protocol/ is the leaf every other folder may
 * import; config/ re-exports them for its schema and the CLI.
 */
/**
 * OpenClaw's thinking levels. "xhigh" is the largest budget a provider offers; "adaptive" lets the provider or model
 * decide how much to think (providers/wire.ts and anthropic-messages.ts say what each level sends).
 */
export const thinkingLevels = ["off", "minimal", "low", "medium", "high", "xhigh", "adaptive"] as const;
export const queueModes = ["steer", "followup", "collect", "interrupt"] as const;
/** What a run shows of the model's reasoning: nothing, one block before the answer, or a live stream. */
export const reasoningLevels = ["off", "on", "stream"] as const;
/** Inline tool summaries in the reply: none, one line per tool call, or the line with the (capped) result. */
export const verboseLevels = ["off", "on", "full"] as const;
export type ThinkingLevel = (typeof thinkingLevels)[number];
export type ReasoningLevel = (typeof reasoningLevels)[number];
export type VerboseLevel = (typeof verboseLevels)[number];
