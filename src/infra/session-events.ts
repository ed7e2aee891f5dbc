/**
 * What happens to sessions, for clients that follow them (OpenClaw's `sessions.changed` and `session.message`):
 * a session was created, reset, deleted or patched, or a transcript message was appended. Run status changes are
 * not published here: the gateway reads them from the run events' lifecycle. Emitting costs nothing while nobody
 * listens, so the run path publishes unconditionally.
 */
import type { TranscriptRow } from "../storage/types.js";

export type SessionChangeReason = "created" | "reset" | "deleted" | "patched";

/**
 * `remote`: heard from another gateway node on the same Postgres (events/pg-session-relay.ts); the relay announces
 * only the notices without it, so none goes round twice.
 */
export type SessionEvent =
  | { type: "changed"; sessionKey: string; reason: SessionChangeReason; remote?: boolean }
  /** a transcript message row, as stored (images as references) */
  | { type: "message"; sessionKey: string; row: TranscriptRow; remote?: boolean };

export type SessionEventListener = (event: SessionEvent) => void;

export class SessionEvents {
  private readonly listeners = new Set<SessionEventListener>();

  subscribe(listener: SessionEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** whether anyone listens (a publisher may skip work it would do only for a listener) */
  get active(): boolean {
    return this.listeners.size > 0;
  }

  /** A listener that throws is isolated from the others and from the publisher (a run must not fail for it). */
  emit(event: SessionEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        process.emitWarning(`session event listener failed: ${(err as Error)?.message ?? String(err)}`);
      }
    }
  }
}
