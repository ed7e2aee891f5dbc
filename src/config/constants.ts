/** Enumerations shared by the schema and the CLI; kept apart so the CLI can use them without loading zod. */
// The two that are also wire values are defined once, in protocol/ (the leaf), and shared from here.
export { queueModes, reasoningLevels, thinkingLevels, verboseLevels } from "../protocol/enums.js";
export const dropPolicies = ["summarize", "old", "new"] as const;
export const apiKinds = ["openai-completions", "openai-responses", "anthropic-messages", "scripted"] as const;
