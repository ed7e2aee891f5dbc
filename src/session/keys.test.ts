import { describe, expect, it } from "vitest";
import { DEFAULT_SESSION_KEY, normalizeSessionKey, SessionKeyError, sessionLaneName } from "./keys.js";

describe("session keys", () => {
  it("no key means the default session agent:main:main", () => {
    expect(DEFAULT_SESSION_KEY).toBe("agent:main:main");
    expect(normalizeSessionKey(undefined)).toEqual({
      key: "agent:main:main",
      kind: "agent",
      agentId: "main",
      rest: "main",
    });
    expect(normalizeSessionKey("").key).toBe("agent:main:main");
  });

  it("no key for another agent means that agent's main session", () => {
    expect(normalizeSessionKey(undefined, "ops")).toMatchObject({ key: "agent:ops:main", agentId: "ops" });
  });

  it("agent:<id>:<rest> is kept as is and names its agent", () => {
    expect(normalizeSessionKey("agent:main:main")).toEqual({
      key: "agent:main:main",
      kind: "agent",
      agentId: "main",
      rest: "main",
    });
    expect(normalizeSessionKey("agent:ops:telegram:dm:42", "main")).toEqual({
      key: "agent:ops:telegram:dm:42",
      kind: "agent",
      agentId: "ops",
      rest: "telegram:dm:42",
    });
  });

  it("cron:<jobId> and hook:<uuid> are their own kinds, run by the requesting agent", () => {
    expect(normalizeSessionKey("cron:nightly-report", "ops")).toEqual({
      key: "cron:nightly-report",
      kind: "cron",
      agentId: "ops",
      rest: "nightly-report",
    });
    expect(normalizeSessionKey("hook:5b0c7e0e-6f8d-4c1e-9a47-2d7c3a1f9e10")).toMatchObject({
      key: "hook:5b0c7e0e-6f8d-4c1e-9a47-2d7c3a1f9e10",
      kind: "hook",
      agentId: "main",
    });
  });

  it("global is the one shared session", () => {
    expect(normalizeSessionKey("global")).toMatchObject({ key: "global", kind: "global" });
  });

  it("a bare key is scoped to the run's agent", () => {
    expect(normalizeSessionKey("support-42")).toEqual({
      key: "agent:main:support-42",
      kind: "agent",
      agentId: "main",
      rest: "support-42",
    });
    expect(normalizeSessionKey("support-42", "billing").key).toBe("agent:billing:support-42");
  });

  it("surrounding whitespace is trimmed", () => {
    expect(normalizeSessionKey("  agent:main:work \n").key).toBe("agent:main:work");
  });

  it.each([
    ["agent:", /agent id is missing/],
    ["agent::x", /agent id is missing/],
    ["agent:main:", /name is missing/],
    ["agent:main", /name is missing/],
    ["agent:b@d:x", /agent id is missing or invalid/],
    ["agent:main:my session", /whitespace/],
    ["support\t42", /whitespace/],
    ["cron:", /expected cron:<id>/],
    ["hook:", /expected hook:<id>/],
  ])("rejects the malformed key %j with a clear error", (raw, message) => {
    let error: unknown;
    try {
      normalizeSessionKey(raw);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(SessionKeyError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toContain(raw.trim());
  });

  it("a malformed agent: key is never silently the default agent", () => {
    expect(() => normalizeSessionKey("agent::main")).toThrow(SessionKeyError);
    expect(() => normalizeSessionKey("agent:")).toThrow(SessionKeyError);
  });

  it("rejects an invalid agent id given by the caller", () => {
    expect(() => normalizeSessionKey("support-42", "no such agent")).toThrow(/invalid agent id "no such agent"/);
  });

  it("rejects absurdly long keys", () => {
    expect(() => normalizeSessionKey(`agent:main:${"x".repeat(600)}`)).toThrow(/longer than 512/);
  });

  it("each session gets its own lane", () => {
    expect(sessionLaneName("agent:main:main")).toBe("session:agent:main:main");
  });
});

describe("nul-in-session-key-is-refused (issue 25): the one door every key goes through (RPC, CLI, cron)", () => {
  it("a NUL or any other control character is a SessionKeyError that does not echo the key", () => {
    for (const raw of ["a\u0000b", "agent:main:x\u0000", "cron:\u0001job", "x\u007f", "x\u009b"]) {
      expect(() => normalizeSessionKey(raw)).toThrow(
        new SessionKeyError("invalid session key: must not contain control characters"),
      );
    }
  });
});
