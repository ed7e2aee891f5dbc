/**
 * Enumerations that appear on the wire. They live here because protocol/ is the leaf every other folder may
 * import; config/ re-exports them for its schema and the CLI.
 */
export const thinkingLevels = ["off", "minimal", "low", "medium", "high"] as const;
export const queueModes = ["steer", "followup", "collect", "interrupt"] as const;
