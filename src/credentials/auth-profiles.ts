/**
 * The process's auth profiles (SPEC 23): the profiles config declares, their shared health, and for each run the
 * chooser it uses (`forRun`, the RunProfile's `credentials` slot). Built once per process by node/ (compose.ts).
 */
import type { LoopgateConfig } from "../config/schema.js";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import type { AuthProfileStatus } from "../protocol/payloads.js";
import type { Store } from "../storage/types.js";
import { AuthHealth } from "./health.js";
import { orderProfiles } from "./order.js";
import { type AuthProfile, type ResolvedAuthProfile, resolveAuthProfiles } from "./profiles.js";
import { type RunAuthHooks, RunCredentials } from "./run-credentials.js";

const HOUR_MS = 3_600_000;

/** One profile as `models.authStatus` shows it (declared once, with the wire types): never a key. */
export type { AuthProfileStatus };

export interface AuthProfilesOptions {
  config: LoopgateConfig;
  profiles: ResolvedAuthProfile[];
  store: Pick<
    Store,
    "listAuthHealth" | "putAuthHealth" | "clearAuthHealth" | "touchAuthProfile" | "getSession" | "updateSession"
  >;
  clock: Pick<Clock, "now">;
  logger: Pick<Logger, "warn">;
  random?: () => number;
  healthCacheMs?: number;
}

export class AuthProfiles {
  readonly health: AuthHealth;

  constructor(private readonly o: AuthProfilesOptions) {
    const c = o.config.auth.cooldowns;
    this.health = new AuthHealth({
      store: o.store,
      clock: o.clock,
      logger: o.logger,
      random: o.random,
      cacheMs: o.healthCacheMs,
      settings: {
        billingBackoffMs: c.billingBackoffHours * HOUR_MS,
        billingMaxMs: c.billingMaxHours * HOUR_MS,
        failureWindowMs: c.failureWindowHours * HOUR_MS,
      },
    });
  }

  /** every profile, in declaration order */
  get list(): readonly AuthProfile[] {
    return this.o.profiles;
  }

  has(id: string): boolean {
    return this.o.profiles.some((p) => p.id === id);
  }

  /** whether a provider has any profile: a provider without one is called as configured, nothing read or written */
  covers(providerId: string): boolean {
    return this.o.profiles.some((p) => p.provider === providerId);
  }

  /** A provider's profiles in the order an agent tries them for `model`, usable first. */
  ordered(providerId: string, agentId: string, model: string): ResolvedAuthProfile[] {
    const own = this.o.profiles.filter((p) => p.provider === providerId);
    if (own.length === 0) return [];
    const agent = this.o.config.agents.list.find((a) => a.id === agentId)?.auth?.order[providerId];
    return orderProfiles(own, { agent, provider: this.o.config.auth.order[providerId] }, (p) =>
      this.health.stateOf(p.id, model),
    );
  }

  /** The chooser of one run: the session's pins are read on its first model call of a provider with profiles. */
  forRun(run: { agentId: string; sessionKey: string; runPin?: string; hooks: RunAuthHooks }): RunCredentials {
    return new RunCredentials(this, this.o.store, run);
  }

  /** `models.authStatus`: every profile's state, fresh from the store (other nodes' cooldowns included). */
  async status(): Promise<AuthProfileStatus[]> {
    await this.health.fresh();
    const now = this.o.clock.now();
    const rows = this.health.all();
    return this.o.profiles.map((p) => {
      const own = rows.filter((r) => r.profileId === p.id);
      const whole = own.find((r) => r.model === "");
      const cooling = own
        .filter((r) => r.model !== "" && r.until !== undefined && r.until > now)
        .map((r) => ({ model: r.model, until: r.until as number, ...(r.reason ? { reason: r.reason } : {}) }));
      const disabled = whole?.until !== undefined && whole.until > now;
      const longest = cooling.reduce<(typeof cooling)[number] | undefined>(
        (a, b) => (a && a.until >= b.until ? a : b),
        undefined,
      );
      const state = disabled ? "disabled" : cooling.length > 0 ? "cooldown" : "ok";
      const until = disabled ? whole?.until : longest?.until;
      const reason = disabled ? whole?.reason : longest?.reason;
      return {
        id: p.id,
        provider: p.provider,
        mode: p.mode,
        state,
        ...(until !== undefined ? { until } : {}),
        ...(reason ? { reason } : {}),
        ...(cooling.length > 0 ? { models: cooling } : {}),
        errorCount: Math.max(0, ...own.map((r) => r.errorCount)),
        ...(whole?.lastUsed !== undefined ? { lastUsed: whole.lastUsed } : {}),
        ...(p.implicit ? { implicit: true } : {}),
      };
    });
  }

  /** `loopgate models auth clear <id>`: ends its cooldowns and disable on every node (the store is shared). */
  async clear(id: string): Promise<{ cleared: number }> {
    if (!this.has(id))
      throw new UnknownAuthProfileError(
        id,
        this.o.profiles.map((p) => p.id),
      );
    return { cleared: await this.health.clear(id) };
  }
}

/** The process's auth profiles from config, their health in `store`: what node/ (or a runtime built alone) uses. */
export function authProfilesFor(
  config: LoopgateConfig,
  store: AuthProfilesOptions["store"],
  o: { clock: Pick<Clock, "now">; logger: Pick<Logger, "warn">; env: NodeJS.ProcessEnv },
): AuthProfiles {
  return new AuthProfiles({
    config,
    store,
    clock: o.clock,
    logger: o.logger,
    profiles: resolveAuthProfiles(config, o.env),
  });
}

export class UnknownAuthProfileError extends Error {
  constructor(id: string, known: readonly string[]) {
    super(`unknown auth profile "${id}" (configured: ${known.length ? known.join(", ") : "none"})`);
    this.name = "UnknownAuthProfileError";
  }
}
