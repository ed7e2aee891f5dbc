/** `gateway.bind` / `--bind`: `loopback` (default), `lan` (all interfaces) or a literal host. */
export function resolveBindHost(bind: string | undefined): string {
  const b = (bind ?? "loopback").trim();
  if (b === "" || b === "loopback") return "127.0.0.1";
  if (b === "lan") return "0.0.0.0";
  return b;
}

export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost" || h === "::1") return true;
  const v4 = h.startsWith("::ffff:") ? h.slice(7) : h;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/** ws://host:port with IPv6 literals bracketed (a colon is enough to tell; net.isIPv6 costs ms on first use). */
export function wsUrl(host: string, port: number): string {
  return `ws://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}`;
}
