/**
 * A timestamp in the machine's local time with its zone spelled out, e.g. "2026-11-30 19:04:05 UTC+01:00":
 * sortable like ISO, readable at a glance, and never ambiguous about which clock it is.
 */
export function formatLocalTime(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, "0");
  const date = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
  const time = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  // getTimezoneOffset is minutes *behind* UTC (UTC+01:00 gives -60)
  const offset = -d.getTimezoneOffset();
  const sign = offset < 0 ? "-" : "+";
  const abs = Math.abs(offset);
  return `${date} ${time} UTC${sign}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
}
