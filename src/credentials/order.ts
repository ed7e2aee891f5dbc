/**
 * The order a provider's auth profiles are tried in (SPEC 23), pure: the agent's `auth.order`, then `auth.order`,
 * then declaration order; profiles cooling down or disabled go after the usable ones, soonest usable again first.
 */
import type { AuthProfile } from "./profiles.js";

export interface ProfileState {
  state: "ok" | "cooldown" | "disabled";
  /** when it is usable again (cooldown / disabled) */
  until?: number;
  reason?: string;
}

export function orderProfiles<P extends AuthProfile>(
  profiles: readonly P[],
  orders: { agent?: readonly string[]; provider?: readonly string[] },
  stateOf: (profile: P) => ProfileState,
): P[] {
  const preferred = [...(orders.agent ?? []), ...(orders.provider ?? [])];
  const rank = (p: P) => {
    const i = preferred.indexOf(p.id);
    return i === -1 ? preferred.length + profiles.indexOf(p) : i;
  };
  const byPreference = [...profiles].sort((a, b) => rank(a) - rank(b));
  const states = new Map(byPreference.map((p) => [p, stateOf(p)]));
  const usable = byPreference.filter((p) => states.get(p)?.state === "ok");
  const waiting = byPreference
    .filter((p) => states.get(p)?.state !== "ok")
    .sort((a, b) => (states.get(a)?.until ?? 0) - (states.get(b)?.until ?? 0));
  return [...usable, ...waiting];
}
