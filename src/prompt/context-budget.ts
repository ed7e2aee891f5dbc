/**
 * Cheap context arithmetic. The estimate is deliberately crude (4 chars per token): it runs before every model
 * call, must not load a tokenizer, and only has to catch requests that are clearly too big before the provider
 * rejects them (or bills for them).
 */

export const DEFAULT_COMPACTION_RESERVE_TOKENS = 20_000;

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * Tokens kept free for the reply and for a compaction summary. Capped at a quarter of the window so that a
 * small local model (8k window) is not left with no room for the conversation itself.
 */
export function compactionReserve(
  contextWindow: number,
  configured: number = DEFAULT_COMPACTION_RESERVE_TOKENS,
): number {
  const window = Number.isFinite(contextWindow) ? Math.max(0, contextWindow) : 0;
  const wanted = Number.isFinite(configured) ? Math.max(0, configured) : DEFAULT_COMPACTION_RESERVE_TOKENS;
  return Math.min(wanted, Math.floor(window / 4));
}

export interface ContextFitInput {
  systemPrompt: string;
  /** Total chars of the serialized messages, when the caller already knows it. */
  messagesChars?: number;
  /** Messages as JSON-able values; serialized here when `messagesChars` is not given. */
  messages?: unknown[];
  /** Chars of the serialized tool schemas. */
  toolsChars?: number;
  contextWindow: number;
  /** Defaults to compactionReserve(contextWindow). */
  reserveTokens?: number;
}

export type ContextFitResult =
  | { ok: true; estimatedTokens: number }
  | { ok: false; estimatedTokens: number; limit: number; message: string };

export function checkContextFits(input: ContextFitInput): ContextFitResult {
  const messagesChars = input.messagesChars ?? (input.messages ? JSON.stringify(input.messages).length : 0);
  const systemTokens = estimateTokens(input.systemPrompt);
  const estimatedTokens = systemTokens + Math.ceil((messagesChars + (input.toolsChars ?? 0)) / 4);
  const reserve = input.reserveTokens ?? compactionReserve(input.contextWindow);
  const limit = Math.max(0, input.contextWindow - reserve);
  if (estimatedTokens <= limit) return { ok: true, estimatedTokens };

  // The user sees this text, so it says what happened, that nothing was sent, and what to do next.
  const why =
    systemTokens > limit
      ? ` The system prompt alone is about ${systemTokens} tokens: shorten the workspace files (AGENTS.md, MEMORY.md, ...) or remove skills.`
      : "";
  const message =
    `This conversation no longer fits the model's context window: about ${estimatedTokens} tokens are needed, ` +
    `${limit} are available (${input.contextWindow} minus ${reserve} kept free for the reply and compaction). ` +
    `Nothing was sent to the model.${why} Start a new session with /new to continue.`;
  return { ok: false, estimatedTokens, limit, message };
}
