import { isDeepStrictEqual } from "node:util";
import type { LoopgateConfig } from "./schema.js";

/*
 * What a new config changes, and which of those changes a running process cannot take (SPEC 26). Pure: the live
 * reload (node/live-config.ts) uses it once per reload, never per run.
 */

/**
 * Keys a running gateway reads once at start, so a change reaches it only by a restart: where it listens and who
 * may connect (all of `gateway`), the store, the session write lock, record pruning and the audit ledger's queue
 * (their timers and queues are built at start), plugins and hooks (loaded once, at init), the stream beat, and
 * spend control's ledger and approval settings (built with it). Everything else applies to the next run.
 */
export const RESTART_KEYS: readonly string[] = [
  "gateway",
  "storage",
  "session",
  "audit",
  "plugins",
  "hooks",
  "agents.defaults.streamCoalesceMs",
  "limits.ledger",
  "limits.syncIntervalMs",
  "limits.approvalTimeoutSeconds",
  "cron.enabled",
  "cron.catchUp",
];

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/**
 * The paths whose values differ, as deep as both sides are objects (`gateway.port`, `models.providers.local`); an
 * array is compared whole (`tools.exec.allowlist`). Values are never part of the answer: they may be secrets.
 */
export function changedConfigPaths(prev: unknown, next: unknown, at = ""): string[] {
  if (isPlainObject(prev) && isPlainObject(next)) {
    const out: string[] = [];
    for (const key of new Set([...Object.keys(prev), ...Object.keys(next)])) {
      out.push(...changedConfigPaths(prev[key], next[key], at ? `${at}.${key}` : key));
    }
    return out;
  }
  return isDeepStrictEqual(prev, next) ? [] : [at || "(root)"];
}

/** Whether a changed path lies under (or above) a restart key. */
export function needsRestart(path: string): boolean {
  return RESTART_KEYS.some((key) => path === key || path.startsWith(`${key}.`) || key.startsWith(`${path}.`));
}

/**
 * `next` with the values of the restart keys `prev` runs with: what a running process applies. A copy; neither
 * input is changed.
 */
export function withRunningRestartKeys(next: LoopgateConfig, prev: LoopgateConfig): LoopgateConfig {
  const out = structuredClone(next) as unknown as Record<string, unknown>;
  for (const key of RESTART_KEYS) {
    const parts = key.split(".");
    const last = parts.pop() as string;
    let from: unknown = prev;
    let to: unknown = out;
    for (const part of parts) {
      from = isPlainObject(from) ? from[part] : undefined;
      to = isPlainObject(to) ? to[part] : undefined;
    }
    if (!isPlainObject(to) || !isPlainObject(from)) continue;
    if (Object.hasOwn(from, last)) to[last] = structuredClone(from[last]);
    else delete to[last];
  }
  return out as unknown as LoopgateConfig;
}
