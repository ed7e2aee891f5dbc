/** Small display helpers shared by the pages. */

export function ago(ts: number | undefined, now = Date.now()): string {
  if (!ts) return "—";
  const s = Math.max(0, Math.round((now - ts) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(ts).toLocaleDateString();
}

export function time(ts: number | undefined): string {
  return ts ? new Date(ts).toLocaleTimeString() : "—";
}

export function duration(ms: number | undefined): string {
  if (ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function tokens(n: number | undefined): string {
  if (!n) return "0";
  return n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

/** "agent:main:support-42" shows as "support-42" (the default agent's prefix is noise in a list). */
export function shortKey(key: string): string {
  const m = /^agent:([^:]+):(.+)$/.exec(key);
  return m ? (m[1] === "main" ? m[2] : `${m[1]}/${m[2]}`) : key;
}

export function sessionHref(key: string): string {
  return `#/session/${encodeURIComponent(key)}`;
}

/** "in 1 min 05 s", "in 12 s", "expired": what is left until `deadline`. */
export function countdown(deadline: number | undefined, now = Date.now()): string {
  if (deadline === undefined) return "no deadline";
  const s = Math.ceil((deadline - now) / 1000);
  if (s <= 0) return "expired";
  if (s < 60) return `${s} s left`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${String(s % 60).padStart(2, "0")} s left` : `${Math.floor(m / 60)} h ${m % 60} min left`;
}

/**
 * An audit actor as a person reads it: "device:<64 hex>" shows as its first 8 hex digits (the full id on hover),
 * a labelled token as its label; anything else as it is.
 */
export function shortActor(actor: string | undefined): { text: string; full?: string } {
  if (!actor) return { text: "—" };
  const device = /^device:([0-9a-f]{16,})$/i.exec(actor);
  if (device) return { text: `device ${device[1].slice(0, 8)}`, full: actor };
  if (actor.length > 24) return { text: `${actor.slice(0, 20)}…`, full: actor };
  return { text: actor };
}

/** "$0.0123" (four decimals: a model call often costs less than a cent); "—" when unknown. */
export function usd(n: number | undefined): string {
  return n === undefined ? "—" : `$${n.toFixed(4)}`;
}
