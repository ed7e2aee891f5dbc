/**
 * One run's auth profile chooser (the RunProfile's `credentials` slot, SPEC 23). The key is chosen per model call:
 *
 * - The run's own pin (`--auth-profile`), then the user's (sessions.patch authProfile), then the session's pin, each
 *   only while usable for the call's model; else the first of the provider's order (credentials/order.ts), which
 *   puts usable profiles first and, when none is, the one usable again soonest.
 * - A call that rotates after a failure (`tried` not empty) only takes a usable profile: when none is, the failure
 *   goes to the run's retry backoff and model fallback as it is.
 * - The session's pin follows the profile a call succeeded on (cache locality: the next turns stay on it); it is
 *   dropped after a compaction (the cache is cold anyway) and by /new and /reset (session/lifecycle.ts).
 * - Moving off the profile the run was on (or the session's pin) because it is not usable is reported once, as the
 *   hooks' `rotated` (lifecycle `auth_rotate`, ids only).
 */
import type { ProviderError } from "../providers/types.js";
import type { Store } from "../storage/types.js";
import type { AuthProfiles } from "./auth-profiles.js";
import { type AuthFailureReason, authFailureReason } from "./cooldown.js";

export interface AuthRotation {
  from: string;
  to: string;
  reason: string;
}

export interface RunAuthHooks {
  /** the run moved to another profile of the same provider (lifecycle auth_rotate, audit) */
  rotated(rotation: AuthRotation): void;
  warn?(message: string, fields?: Record<string, unknown>): void;
}

/** The key for one call, with the profile it came from; `apiKey` goes into the request and nowhere else. */
export interface ChosenKey {
  profileId: string;
  apiKey: string;
  /** the profile's mode: how the key is sent (ModelRequest.apiKeyMode) */
  mode: "api_key" | "token";
}

type SessionPins = { session?: string; user?: string };

export class RunCredentials {
  private pins?: Promise<SessionPins>;
  /** per provider: the profile this run's last call used */
  private readonly onProfile = new Map<string, string>();
  private readonly failures = new Map<string, AuthFailureReason>();
  private lastUsed?: string;

  constructor(
    private readonly auth: AuthProfiles,
    private readonly store: Pick<Store, "getSession" | "updateSession">,
    private readonly run: { agentId: string; sessionKey: string; runPin?: string; hooks: RunAuthHooks },
  ) {}

  /** whether calls of `providerId` get their key here (it has profiles) */
  covers(providerId: string): boolean {
    return this.auth.covers(providerId);
  }

  /** the profile of the run's last successful call (run record, console), if any */
  get used(): string | undefined {
    return this.lastUsed;
  }

  /** the profile whose key served the run's last successful call of `providerId` (the cost ledger's row) */
  usedOn(providerId: string): string | undefined {
    return this.lastUsed?.startsWith(`${providerId}:`) ? this.lastUsed : undefined;
  }

  /** The key for a call of `providerId`/`model`; undefined when the provider has no profile (or all were tried). */
  async choose(providerId: string, model: string, tried: ReadonlySet<string>): Promise<ChosenKey | undefined> {
    await this.auth.health.fresh();
    const ordered = this.auth.ordered(providerId, this.run.agentId, model).filter((p) => !tried.has(p.id));
    if (ordered.length === 0) return undefined;
    const pins = await this.sessionPins();
    const usable = (id: string | undefined) =>
      id === undefined
        ? undefined
        : ordered.find((p) => p.id === id && this.auth.health.stateOf(p.id, model).state === "ok");
    const firstUsable = ordered.find((p) => this.auth.health.stateOf(p.id, model).state === "ok");
    const pick =
      usable(this.run.runPin) ??
      usable(pins.user) ??
      usable(pins.session) ??
      (tried.size > 0 ? firstUsable : ordered[0]);
    if (!pick) return undefined;
    const was =
      this.onProfile.get(providerId) ?? (pins.session?.startsWith(`${providerId}:`) ? pins.session : undefined);
    if (was !== undefined && was !== pick.id) {
      const state = this.auth.health.stateOf(was, model);
      const reason = this.failures.get(was) ?? (state.state !== "ok" ? state.reason : undefined);
      if (reason !== undefined) this.run.hooks.rotated({ from: was, to: pick.id, reason });
    }
    this.onProfile.set(providerId, pick.id);
    return { profileId: pick.id, apiKey: pick.key(), mode: pick.mode };
  }

  /** A call on `profileId` failed: a failure that is the key's fault is recorded; returns it (else undefined). */
  async failed(profileId: string, model: string, err: ProviderError): Promise<AuthFailureReason | undefined> {
    const reason = authFailureReason(err);
    if (reason === undefined) return undefined;
    this.failures.set(profileId, reason);
    await this.auth.health.failed(profileId, model, reason, err.resetAfterMs);
    return reason;
  }

  /** A call on `profileId` succeeded: its health is cleared, and the session is pinned to it. */
  succeeded(profileId: string, model: string): void {
    this.auth.health.succeeded(profileId, model);
    this.failures.delete(profileId);
    this.lastUsed = profileId;
    void this.sessionPins()
      .then((pins) => {
        if (pins.session === profileId) return;
        pins.session = profileId;
        return this.store.updateSession(this.run.sessionKey, { authProfile: profileId });
      })
      .catch((err: Error) =>
        this.run.hooks.warn?.("auth profiles: pinning the session failed", { error: err.message }),
      );
  }

  /** After a compaction the session's pin no longer binds: the next call takes the first of the order again. */
  compacted(): void {
    void this.sessionPins().then((pins) => {
      pins.session = undefined;
    });
    this.onProfile.clear();
  }

  /**
   * The session row the run loaded under its session write lock (agent/history-cache.ts): its pins are the ones
   * this run starts from, so the first call reads no session row of its own. While the lock is held only this run
   * moves them (each move is written and kept here too). Ignored once the pins were read.
   */
  knowSession(session: { authProfile?: string; authProfileOverride?: string }): void {
    this.pins ??= Promise.resolve({ session: session.authProfile, user: session.authProfileOverride });
  }

  private sessionPins(): Promise<SessionPins> {
    this.pins ??= this.store.getSession(this.run.sessionKey).then(
      (s) => ({ session: s?.authProfile, user: s?.authProfileOverride }),
      () => ({}),
    );
    return this.pins;
  }
}
