import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../config/load.js";
import { configuredTokenGrants, FULL_GRANT, sessionGlob, TokenGrants } from "./token-grants.js";

describe("session globs", () => {
  it("`*` spans any characters, `?` one, and everything else is literal", () => {
    const support = sessionGlob("agent:main:support-*");
    expect(support.test("agent:main:support-eu")).toBe(true);
    expect(support.test("agent:main:support-eu:thread:7")).toBe(true);
    expect(support.test("agent:main:sales")).toBe(false);
    expect(support.test("xagent:main:support-eu")).toBe(false);
    expect(sessionGlob("agent:main:a.b").test("agent:main:aXb")).toBe(false);
    expect(sessionGlob("cron:job-?").test("cron:job-7")).toBe(true);
    expect(sessionGlob("cron:job-?").test("cron:job-17")).toBe(false);
  });
});

describe("token grants", () => {
  const entries = [
    { token: "alpha", scopes: ["operator.write"], sessions: ["agent:main:a-*"] },
    {
      tokenHash: createHash("sha256").update("beta").digest("hex"),
      scopes: ["operator.read"],
      sessions: ["agent:main:b-*", "cron:*"],
    },
  ];

  it("a token gets its own entry's scopes and sessions; the single token gets everything", () => {
    const grants = new TokenGrants("root", entries);
    const alpha = grants.match("alpha");
    expect(alpha?.scopes).toEqual(["operator.write"]);
    expect(alpha?.sessionAllowed("agent:main:a-1")).toBe(true);
    expect(alpha?.sessionAllowed("agent:main:b-1")).toBe(false);
    const beta = grants.match("beta");
    expect(beta?.scopes).toEqual(["operator.read"]);
    expect(beta?.sessionAllowed("cron:nightly")).toBe(true);
    // every scope and session, known to the cost ledger and rate limits as "gateway"
    expect(grants.match("root")).toMatchObject({ scopes: FULL_GRANT.scopes, sessions: ["*"], identity: "gateway" });
    expect(grants.match("root")?.sessionAllowed("anything")).toBe(true);
    // a tenant token is known by its sha256 prefix (never the token itself) unless it has a name
    expect(alpha?.identity).toMatch(/^token:[0-9a-f]{12}$/);
    expect(grants.match("gamma")).toBeUndefined();
    expect(grants.required).toBe(true);
    expect(new TokenGrants(undefined, []).required).toBe(false);
  });

  it("a tenant token may come from the environment, and a missing variable names its entry", () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: an env reference, resolved by configuredTokenGrants
    const entry = { token: "${TENANT_TOKEN}", scopes: ["operator.write"], sessions: ["*"] };
    const grants = configuredTokenGrants(undefined, [entry], { TENANT_TOKEN: "from-env" });
    expect(grants.match("from-env")?.scopes).toEqual(["operator.write"]);
    expect(() => configuredTokenGrants(undefined, [entry], {})).toThrow(/gateway\.auth\.tokens\[0\]\.token/);
  });

  it("the config refuses an entry with both or neither of token and tokenHash, or a malformed hash", () => {
    const load = (entry: Record<string, unknown>) => () =>
      parseConfig({ gateway: { auth: { tokens: [{ scopes: ["operator.read"], ...entry }] } } });
    expect(load({ token: "a", tokenHash: "0".repeat(64) })).toThrow(
      "gateway.auth.tokens[0]: set exactly one of token or tokenHash",
    );
    expect(load({})).toThrow(ConfigError);
    expect(load({ tokenHash: "abc" })).toThrow(
      "gateway.auth.tokens[0].tokenHash: expected the sha256 of the token as 64 hex digits",
    );
    expect(load({ token: "a", scopes: ["operator.root"] })).toThrow(/scopes/);
    const parsed = parseConfig({ gateway: { auth: { tokens: [{ token: "a", scopes: ["operator.read"] }] } } });
    expect(parsed.gateway.auth.tokens[0].sessions).toEqual(["*"]);
  });
});
