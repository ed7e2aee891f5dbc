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

/** "$0.0123" (four decimals: a model call often costs less than a cent); "—" when unknown. */
export function usd(n: number | undefined): string {
  return n === undefined ? "—" : `$${n.toFixed(4)}`;
}
