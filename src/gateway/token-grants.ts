import { createHash, timingSafeEqual } from "node:crypto";
import { resolveSecretRef } from "../config/secret-ref.js";
import { OPERATOR_SCOPES } from "../protocol/frames.js";
import { sessionGlob } from "../session/session-glob.js";

export { sessionGlob };

/** What a presented token entitles a client to (SPEC 21): scopes, and the session keys they apply inside. */
export interface Grant {
  readonly scopes: readonly string[];
  /** the configured globs, for messages */
  readonly sessions: readonly string[];
  sessionAllowed(sessionKey: string): boolean;
  /**
   * In-band control (`/stop`, `/new`, `/reset`, `/compact`, queueMode "interrupt") is denied: the config key that
   * denies it, for the refusal (`gateway.auth.tokens[2].commands`). Undefined: allowed.
   */
  readonly commandsDeniedBy?: string;
  /**
   * Who the token is in the cost ledger, budgets and rate limits (never the secret): `gateway.auth.tokens[].name`,
   * else `token:<12 hex digits of its sha256>`; "gateway" for the single gateway.auth.token; absent without a token.
   */
  readonly identity?: string;
  /** the token's own intake limits (`gateway.auth.tokens[].limits`) and the key that set them */
  readonly limits?: { readonly values: TokenRateLimits; readonly key: string };
}

/** `gateway.auth.tokens[].limits` / `limits.tokens` (limits/rate-limits.ts). */
export interface TokenRateLimits {
  runsPerMinute?: number;
  concurrentRuns?: number;
  tokensPerDay?: number;
}

/** One `gateway.auth.tokens[]` entry as configured (token already resolved from any `${ENV}` reference). */
export interface TokenGrantConfig {
  token?: string;
  tokenHash?: string;
  scopes: readonly string[];
  sessions: readonly string[];
  /** in-band control allowed (default true) */
  commands?: boolean;
  name?: string;
  limits?: TokenRateLimits;
}

/** The single `gateway.auth.token` — and a gateway without any token — grant every scope in every session. */
export const FULL_GRANT: Grant = {
  scopes: OPERATOR_SCOPES,
  sessions: ["*"],
  sessionAllowed: () => true,
};

/** The single gateway.auth.token: every scope and session, known as "gateway" to the ledger and limits. */
const SINGLE_TOKEN_GRANT: Grant = { ...FULL_GRANT, identity: "gateway" };

function grantOf(e: TokenGrantConfig, index: number, digest: Buffer): Grant {
  const globs = e.sessions.map(sessionGlob);
  return {
    scopes: e.scopes,
    sessions: e.sessions,
    sessionAllowed: (key) => globs.some((g) => g.test(key)),
    ...(e.commands === false ? { commandsDeniedBy: `gateway.auth.tokens[${index}].commands` } : {}),
    identity: e.name ?? `token:${digest.toString("hex").slice(0, 12)}`,
    ...(e.limits ? { limits: { values: e.limits, key: `gateway.auth.tokens[${index}].limits` } } : {}),
  };
}

const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest();

interface Candidate {
  digest: Buffer;
  grant: Grant;
}

/**
 * The tokens a gateway accepts. Every candidate is compared (by sha256 digest, with timingSafeEqual) whatever
 * matched earlier, so the time a connect takes says nothing about which token or how much of it was right.
 */
export class TokenGrants {
  private readonly candidates: Candidate[];

  constructor(single: string | undefined, entries: readonly TokenGrantConfig[]) {
    this.candidates = entries.map((e, i) => {
      const digest = e.tokenHash !== undefined ? Buffer.from(e.tokenHash, "hex") : sha256(e.token ?? "");
      return { digest, grant: grantOf(e, i, digest) };
    });
    if (single !== undefined) this.candidates.push({ digest: sha256(single), grant: SINGLE_TOKEN_GRANT });
  }

  /** whether clients must present a token at all */
  get required(): boolean {
    return this.candidates.length > 0;
  }

  /** The grant of the first configured entry the token matches; undefined when none does. */
  match(given: string): Grant | undefined {
    const digest = sha256(given);
    let found: Grant | undefined;
    for (const c of this.candidates) {
      if (timingSafeEqual(c.digest, digest) && found === undefined) found = c.grant;
    }
    return found;
  }
}

/** The gateway's accepted tokens from its config; `gateway.auth.tokens[].token` may be a `${ENV}` reference. */
export function configuredTokenGrants(
  single: string | undefined,
  entries: readonly TokenGrantConfig[],
  env: NodeJS.ProcessEnv,
): TokenGrants {
  const resolved = entries.map((e, i) => ({
    ...e,
    token: resolveSecretRef(e.token, `gateway.auth.tokens[${i}].token`, env),
  }));
  return new TokenGrants(single, resolved);
}

/**
 * The grant of an HTTP request's `Authorization: Bearer <token>`: "missing" without one, "invalid" for a token the
 * gateway does not accept.
 */
export function bearerGrant(header: string | undefined, tokens: TokenGrants): Grant | "missing" | "invalid" {
  const m = /^Bearer\s+(.+)$/i.exec(header ?? "");
  if (!m) return "missing";
  return tokens.match(m[1].trim()) ?? "invalid";
}

/**
 * Whether a grant may read what is the whole gateway's (`/health` details, `/metrics`): every session, with
 * operator.read or operator.admin. A token limited to some sessions is one tenant's; a write-only token reads nothing.
 */
export function readsWholeGateway(grant: Grant): boolean {
  if (!grant.sessions.includes("*")) return false;
  return grant.scopes.includes("operator.read") || grant.scopes.includes("operator.admin");
}
