import type { HistoryEntry } from "../protocol/payloads.js";
import type { TranscriptRow } from "../storage/types.js";
import { redactTranscriptRow } from "../tools/redact-transcript.js";

/**
 * A transcript row as chat clients read it (chat.history, session.message): the stored message spread into
 * OpenClaw's message shape, after the same redaction events get. Image parts stay references (no bytes).
 */
export function historyEntry(stored: TranscriptRow): HistoryEntry {
  const r = redactTranscriptRow(stored);
  return {
    seq: r.seq,
    kind: r.kind,
    createdAt: r.createdAt,
    ...(r.runId !== undefined ? { runId: r.runId } : {}),
    ...(r.message !== undefined ? r.message : {}),
    timestamp: r.createdAt,
    ...(r.text !== undefined ? { text: r.text } : {}),
  };
}
