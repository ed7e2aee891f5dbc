/**
 * Session-key globs, as `gateway.auth.tokens[].sessions` names them: `*` matches any run of characters (`:`
 * included), `?` one character; everything else is literal. Here rather than in gateway/ because an allow-always
 * answer (agent/exec-allow-always.ts) is confined to the globs of the approver's grant too.
 */
export function sessionGlob(pattern: string): RegExp {
  const body = pattern
    .split("")
    .map((c) => (c === "*" ? ".*" : c === "?" ? "." : c.replace(/[\\^$.+()|{}[\]]/g, "\\$&")))
    .join("");
  return new RegExp(`^${body}$`, "s");
}

/** Whether any of `patterns` matches the session key. */
export function sessionMatchesAny(patterns: readonly string[], sessionKey: string): boolean {
  return patterns.some((p) => sessionGlob(p).test(sessionKey));
}
