import type { SessionInfo } from "../protocol/payloads.js";
import type { SessionRecord } from "../storage/types.js";

/** How long a derived title may be (OpenClaw shows it in a session list row). */
const TITLE_CHARS = 80;

/**
 * A session as the gateway shows it (sessions.list / get / describe / patch, sessions.changed): the store record
 * minus internals, under both Loopgate's and OpenClaw's SessionRow names. `running`: a run of it is in progress.
 */
export function sessionInfo(s: SessionRecord, extra: { running?: boolean; derivedTitle?: string } = {}): SessionInfo {
  const provider = s.modelOverride?.split("/")[0];
  return {
    key: s.key,
    sessionId: s.sessionId,
    kind: s.key === "global" ? "global" : "direct",
    agentId: s.agentId,
    generation: s.generation,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    ...(s.label !== undefined ? { label: s.label } : {}),
    ...(s.modelOverride !== undefined ? { model: s.modelOverride, modelProvider: provider } : {}),
    ...(s.thinking !== undefined ? { thinking: s.thinking, thinkingLevel: s.thinking } : {}),
    ...(s.verboseLevel !== undefined ? { verboseLevel: s.verboseLevel } : {}),
    ...(s.reasoningLevel !== undefined ? { reasoningLevel: s.reasoningLevel } : {}),
    ...(s.queueMode !== undefined ? { queueMode: s.queueMode } : {}),
    ...(s.authProfileOverride !== undefined ? { authProfile: s.authProfileOverride } : {}),
    ...(s.authProfile !== undefined ? { authProfilePinned: s.authProfile } : {}),
    ...(extra.running ? { status: "running" as const } : {}),
    ...(extra.derivedTitle ? { derivedTitle: extra.derivedTitle } : {}),
    inputTokens: s.inputTokens,
    outputTokens: s.outputTokens,
    totalTokens: s.totalTokens,
    compactionCount: s.compactionCount,
  };
}

/** The first line of a text, cut to a title's length. */
export function titleOf(text: string): string | undefined {
  const line = text.trim().split("\n")[0]?.trim() ?? "";
  if (!line) return undefined;
  return line.length > TITLE_CHARS ? `${line.slice(0, TITLE_CHARS - 1)}…` : line;
}
