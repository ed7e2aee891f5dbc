/**
 * Auth profile health shared through the Store (SPEC 23): cooldowns, disables, error counts and last use live in the
 * `auth_health` table, so every gateway node on one Postgres sees the same health and a restart keeps it.
 *
 * Reads go through a short cache (`cacheMs`, 1 s): choosing a key costs no round trip per model call, and a cooldown
 * another node set is seen here within a second. Whatever this node writes is in its cache at once.
 *
 * Writes are small and never on the success path's critical section: a success writes only when the (profile, model)
 * had a failure to clear, and last-used at most once a minute per profile; both are fire-and-forget (a failed write
 * is logged, never fails the call). A failure's write is awaited, so the next choice (here or on another node) sees it.
 */
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import type { AuthHealthRow, Store } from "../storage/types.js";
import { type AuthFailureReason, type CooldownSettings, failureEffect } from "./cooldown.js";
import type { ProfileState } from "./order.js";

type HealthStore = Pick<Store, "listAuthHealth" | "putAuthHealth" | "clearAuthHealth" | "touchAuthProfile">;

/** how stale the health a choice reads may be: a cooldown set by another node is respected within this long */
export const HEALTH_CACHE_MS = 1000;
/** last-used is written at most this often per profile */
export const LAST_USED_WRITE_MS = 60_000;

export interface AuthHealthOptions {
  store: HealthStore;
  clock: Pick<Clock, "now">;
  logger: Pick<Logger, "warn">;
  settings: CooldownSettings;
  random?: () => number;
  cacheMs?: number;
}

const rowKey = (profileId: string, model: string) => `${profileId}\u0000${model}`;

export class AuthHealth {
  private rows = new Map<string, AuthHealthRow>();
  private loadedAt = Number.NEGATIVE_INFINITY;
  private loading?: Promise<void>;
  private readonly random: () => number;
  private readonly cacheMs: number;

  constructor(private readonly o: AuthHealthOptions) {
    this.random = o.random ?? Math.random;
    this.cacheMs = o.cacheMs ?? HEALTH_CACHE_MS;
  }

  /** Refreshes the cache from the store when it is older than cacheMs (one read shared by concurrent callers). */
  async fresh(): Promise<void> {
    if (this.o.clock.now() - this.loadedAt < this.cacheMs) return;
    this.loading ??= (async () => {
      try {
        const rows = await this.o.store.listAuthHealth();
        this.rows = new Map(rows.map((r) => [rowKey(r.profileId, r.model), r]));
        this.loadedAt = this.o.clock.now();
      } catch (err) {
        // the last health known is still the best guess; the next choice tries the store again
        this.o.logger.warn("auth profiles: reading their health failed", { error: (err as Error).message });
      } finally {
        this.loading = undefined;
      }
    })();
    await this.loading;
  }

  /** A profile's state for one model, from the cache: disabled (whole profile) wins over a model's cooldown. */
  stateOf(profileId: string, model: string): ProfileState {
    const now = this.o.clock.now();
    const whole = this.rows.get(rowKey(profileId, ""));
    if (whole?.until !== undefined && whole.until > now)
      return { state: "disabled", until: whole.until, reason: whole.reason };
    const one = this.rows.get(rowKey(profileId, model));
    if (one?.until !== undefined && one.until > now) return { state: "cooldown", until: one.until, reason: one.reason };
    return { state: "ok" };
  }

  /** Every cached row (status views). */
  all(): AuthHealthRow[] {
    return [...this.rows.values()];
  }

  /** Records a failure that is the key's fault; returns what it did. Awaited: the next choice must see it. */
  async failed(profileId: string, model: string, reason: AuthFailureReason, resetAfterMs?: number) {
    const now = this.o.clock.now();
    const probe = failureEffect({ reason, resetAfterMs, now, random: this.random, settings: this.o.settings });
    const scopeModel = probe.scope === "model" ? model : "";
    const previous = this.rows.get(rowKey(profileId, scopeModel));
    const effect = failureEffect({
      reason,
      resetAfterMs,
      previous,
      now,
      random: this.random,
      settings: this.o.settings,
    });
    const row: AuthHealthRow = {
      profileId,
      model: scopeModel,
      until: effect.until,
      reason,
      errorCount: effect.errorCount,
      lastFailureAt: now,
      ...(previous?.lastUsed !== undefined ? { lastUsed: previous.lastUsed } : {}),
    };
    this.rows.set(rowKey(profileId, scopeModel), row);
    try {
      await this.o.store.putAuthHealth(row);
    } catch (err) {
      this.o.logger.warn("auth profiles: storing a cooldown failed", {
        profile: profileId,
        error: (err as Error).message,
      });
    }
    return effect;
  }

  /**
   * A call on (profile, model) succeeded: its cooldown and error count are cleared, and a disable of the whole profile
   * too (the key works again). Writes only when there was something to clear; last-used at most once a minute.
   */
  succeeded(profileId: string, model: string): void {
    const now = this.o.clock.now();
    for (const scope of [model, ""]) {
      const row = this.rows.get(rowKey(profileId, scope));
      if (!row || (row.until === undefined && row.reason === undefined && row.errorCount === 0)) continue;
      this.rows.set(rowKey(profileId, scope), { profileId, model: scope, errorCount: 0, lastUsed: row.lastUsed });
      this.background(this.o.store.clearAuthHealth(profileId, scope), "clearing a cooldown", profileId);
    }
    const whole = this.rows.get(rowKey(profileId, ""));
    if (whole?.lastUsed !== undefined && now - whole.lastUsed < LAST_USED_WRITE_MS) return;
    this.rows.set(rowKey(profileId, ""), { ...(whole ?? { profileId, model: "", errorCount: 0 }), lastUsed: now });
    this.background(this.o.store.touchAuthProfile(profileId, now), "recording its last use", profileId);
  }

  /** `loopgate models auth clear <id>`: ends the profile's cooldowns and disable; returns how many rows it cleared. */
  async clear(profileId: string): Promise<number> {
    const cleared = await this.o.store.clearAuthHealth(profileId);
    for (const [key, row] of this.rows) {
      if (row.profileId === profileId)
        this.rows.set(key, { profileId, model: row.model, errorCount: 0, lastUsed: row.lastUsed });
    }
    return cleared;
  }

  private background(write: Promise<unknown>, what: string, profileId: string): void {
    write.catch((err: Error) =>
      this.o.logger.warn(`auth profiles: ${what} failed`, { profile: profileId, error: err.message }),
    );
  }
}
