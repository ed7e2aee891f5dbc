import type { InternalHookRegistry } from "../hooks/internal.js";
import type { HookLogger } from "../hooks/logger.js";
import type { PluginHookRunContext, PluginHookRunner } from "../hooks/plugin-hooks.js";
import type { Clock } from "../infra/clock.js";
import type { SessionEvents } from "../infra/session-events.js";
import type { SessionRecord, Store } from "../storage/types.js";
import type { SessionLockPort } from "./lock-port.js";

/** The in-band commands that end a session's transcript generation (and the `reason` sessions.reset takes). */
export type ResetCommand = "new" | "reset";

/** `session_end`'s reason, in OpenClaw's words: a /new, a /reset (in-band or by RPC), a deletion. */
export type SessionEndReason = ResetCommand | "deleted";

export interface ResetRequest {
  /** "new" or "reset": the `session_end` hook's reason and, for a command, which `command:<name>` hook fires */
  reason: ResetCommand;
  /** the reset marker row's text in the old generation: what asked for it ("/new", "sessions.reset (new)", ...) */
  marker: string;
  /**
   * Set when a user asked for it as a command (in-band /new or /reset, or sessions.reset): the internal hook
   * `command:<reason>` fires with this context. Unset (cron's isolated run) fires none: no one typed a command.
   */
  command?: { args: string; source: string };
  /** the run that asked (in-band), passed to the hooks */
  runId?: string;
  /** false: no `session_end` / `session_start` for this change (OpenClaw's `emitLifecycleHooks`); default true */
  emitLifecycleHooks?: boolean;
}

export interface ResetOutcome {
  /** the new transcript generation */
  generation: number;
  /** the session as it was before the reset */
  previous: SessionRecord;
}

export interface DeleteRequest {
  /** false: no `session_end` for this deletion (OpenClaw's `emitLifecycleHooks`); default true */
  emitLifecycleHooks?: boolean;
}

/** What the service is given; a plain options object, so whoever composes a process can wire it. */
export interface SessionLifecycleOptions {
  store: Pick<Store, "getSession" | "resetSession" | "deleteSession" | "updateSession">;
  /** the same port every run's transcript writes go through (SPEC 3) */
  locks: SessionLockPort;
  hooks: PluginHookRunner;
  internalHooks: InternalHookRegistry;
  sessionEvents: SessionEvents;
  /** the per-session history kept between turns: a reset or delete must not leave the old rows cached */
  history: { forget(sessionKey: string): void };
  clock: Clock;
  logger: HookLogger;
  /**
   * Resolves once plugins and internal hooks are loaded (AgentRuntime.init). A gateway loads them in the
   * background, so a reset asked for before that would otherwise fire hooks nobody has registered yet.
   */
  ready?: () => Promise<void>;
  /**
   * Called under the session's lock once a reset or a deletion is written: what belongs to the ended generation goes
   * with it (a `scope: "session"` sandbox). A failure is logged; the reset stands.
   */
  sessionEnded?: (sessionKey: string, agentId: string) => Promise<void>;
}

/** The session a reset was asked for does not exist (deleted meanwhile); the gateway answers not_found. */
export class UnknownSessionError extends Error {
  readonly code = "not_found";
  constructor(readonly sessionKey: string) {
    super(`unknown session "${sessionKey}"`);
    this.name = "UnknownSessionError";
  }
}

/**
 * New, reset and delete of a session, one way for everyone who asks (the in-band /new and /reset, the
 * sessions.reset and sessions.delete methods, cron's isolated runs):
 * 1. the session write lock, as a run takes it (a busy session makes the caller wait, then fail as a run would);
 * 2. under it: the `command:<name>` internal hook when a user asked by command, the store's change, and the
 *    history cache forgets the session;
 * 3. after the lock is released: followers hear `changed` (reset / deleted), then the plugin hooks `session_end` for
 *    the generation that ended and `session_start` for the new one (none when `emitLifecycleHooks` is false).
 * Hooks are observers: they are started, never awaited, so a slow plugin does not hold up the caller.
 */
export class SessionLifecycle {
  constructor(private readonly deps: SessionLifecycleOptions) {}

  /** Starts a new transcript generation (the old rows are kept behind a reset marker); throws for an unknown key. */
  async reset(sessionKey: string, req: ResetRequest): Promise<ResetOutcome> {
    const { store, history, clock } = this.deps;
    await this.hooksLoaded();
    const outcome = await this.underLock(sessionKey, async () => {
      const previous = await store.getSession(sessionKey);
      if (!previous) throw new UnknownSessionError(sessionKey);
      if (req.command) this.fireCommand(sessionKey, previous, req);
      const generation = await store.resetSession(sessionKey, clock.now(), req.marker);
      // the pinned auth profile starts over with the new transcript (SPEC 23); the user's own pin stays
      if (previous.authProfile !== undefined) await store.updateSession(sessionKey, { authProfile: undefined });
      history.forget(sessionKey);
      await this.ended(sessionKey, previous.agentId);
      return { generation, previous };
    });
    this.deps.sessionEvents.emit({ type: "changed", sessionKey, reason: "reset" });
    if (req.emitLifecycleHooks !== false) {
      const { previous, generation } = outcome;
      const ctx = hookContext(sessionKey, previous, req.runId);
      this.observe(
        "session_end",
        {
          sessionKey,
          sessionId: previous.sessionId,
          reason: req.reason,
          generation: previous.generation,
        },
        ctx,
      );
      this.observe("session_start", { sessionKey, sessionId: previous.sessionId, generation }, ctx);
    }
    return outcome;
  }

  /** Deletes the session, its transcript and its runs' events; false when there was no such session. */
  async delete(sessionKey: string, req: DeleteRequest = {}): Promise<boolean> {
    const { store, history } = this.deps;
    await this.hooksLoaded();
    const previous = await this.underLock(sessionKey, async () => {
      const session = await store.getSession(sessionKey);
      const deleted = await store.deleteSession(sessionKey);
      history.forget(sessionKey);
      if (deleted && session) await this.ended(sessionKey, session.agentId);
      return deleted ? session : undefined;
    });
    if (!previous) return false;
    this.deps.sessionEvents.emit({ type: "changed", sessionKey, reason: "deleted" });
    if (req.emitLifecycleHooks !== false) {
      this.observe(
        "session_end",
        { sessionKey, sessionId: previous.sessionId, reason: "deleted", generation: previous.generation },
        hookContext(sessionKey, previous),
      );
    }
    return true;
  }

  private async ended(sessionKey: string, agentId: string): Promise<void> {
    try {
      await this.deps.sessionEnded?.(sessionKey, agentId);
    } catch (err) {
      this.deps.logger.warn(`session lifecycle: ending "${sessionKey}"'s sandbox failed: ${(err as Error).message}`);
    }
  }

  /** A runtime whose plugins failed to load still resets and deletes sessions: only the hooks are missing. */
  private async hooksLoaded(): Promise<void> {
    try {
      await this.deps.ready?.();
    } catch (err) {
      this.deps.logger.warn(`session lifecycle: hooks not loaded: ${(err as Error)?.message ?? String(err)}`);
    }
  }

  private async underLock<T>(sessionKey: string, fn: () => Promise<T>): Promise<T> {
    const lock = await this.deps.locks.acquire(sessionKey);
    try {
      return await fn();
    } finally {
      await lock.release();
    }
  }

  private observe(
    hook: "session_start" | "session_end",
    event: { sessionKey: string; sessionId: string; reason?: string; generation: number },
    ctx: PluginHookRunContext,
  ): void {
    const { hooks, logger } = this.deps;
    if (!hooks.has(hook)) return;
    hooks.runObservers(hook, event, ctx).catch((err) => logger.warn(`${hook}: ${(err as Error).message}`));
  }

  /** As the in-band path always did: started before the reset is written, not awaited (a hook cannot delay it). */
  private fireCommand(sessionKey: string, session: SessionRecord, req: ResetRequest): void {
    const { internalHooks, logger } = this.deps;
    if (!req.command || !internalHooks.has("command", req.reason)) return;
    const context = {
      agentId: session.agentId,
      sessionKey,
      ...(req.runId !== undefined ? { runId: req.runId } : {}),
      command: req.reason,
      args: req.command.args,
      commandSource: req.command.source,
    };
    internalHooks
      .trigger({ type: "command", action: req.reason, context, messages: [] })
      .catch((err) => logger.warn(`internal hook command:${req.reason}: ${(err as Error).message}`));
  }
}

function hookContext(sessionKey: string, session: SessionRecord, runId?: string): PluginHookRunContext {
  return { agentId: session.agentId, sessionKey, sessionId: session.sessionId, ...(runId ? { runId } : {}) };
}
