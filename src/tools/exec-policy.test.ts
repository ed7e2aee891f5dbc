import { describe, expect, it } from "vitest";
import { decideExec, type ExecPolicy, matchAllowlist, splitCommand } from "./exec-policy.js";

const policy = (p: Partial<ExecPolicy>): ExecPolicy => ({ security: "allowlist", ask: "on-miss", allowlist: [], ...p });

describe("what an allowlist pattern matches", () => {
  const patterns = ["git *", "ls", "ls *", "npm test 2>&1", "grep *"];

  it("every simple command of a compound command must match, not just the first word", () => {
    expect(matchAllowlist("git status", patterns)).toEqual({ ok: true });
    expect(matchAllowlist("git status && rm -rf x", patterns)).toEqual({
      ok: false,
      reason: '"rm -rf x" matches no tools.exec.allowlist pattern',
    });
    for (const cmd of ["git log; rm -rf x", "git log || rm -rf x", "git log | sh", "git log & rm -rf x", "ls\nrm x"]) {
      expect(matchAllowlist(cmd, patterns).ok, cmd).toBe(false);
    }
    expect(matchAllowlist("git log | grep fix", patterns)).toEqual({ ok: true });
  });

  it("command substitution never matches, even inside double quotes", () => {
    for (const cmd of ["git log $(rm -rf x)", "git log `rm -rf x`", 'git commit -m "$(rm -rf x)"', "ls <(rm x)"]) {
      expect(matchAllowlist(cmd, patterns)).toEqual({
        ok: false,
        reason: "a command substitution ($(…), `…`, <(…), >(…)) is never allowlisted",
      });
    }
    // single quotes keep it literal text
    expect(matchAllowlist("git commit -m '$(not run)'", patterns)).toEqual({ ok: true });
  });

  it("quoted operators stay part of the argument; an unterminated quote never matches", () => {
    expect(matchAllowlist('git commit -m "a; b && c"', patterns)).toEqual({ ok: true });
    expect(splitCommand('git commit -m "a; b')).toEqual({ ok: false, reason: "the command has an unterminated quote" });
  });

  it("a glob does not cover a redirection: it must be written in the pattern", () => {
    expect(matchAllowlist("ls > /etc/passwd", patterns).ok).toBe(false);
    expect(matchAllowlist("npm test 2>&1", patterns)).toEqual({ ok: true });
    expect(matchAllowlist("npm test 2>&1 > out", patterns).ok).toBe(false);
  });

  it("`git *` also matches bare `git`; whitespace runs count as one space", () => {
    expect(matchAllowlist("git", patterns)).toEqual({ ok: true });
    expect(matchAllowlist("  git    status  ", patterns)).toEqual({ ok: true });
    expect(matchAllowlist("gitk", patterns).ok).toBe(false);
    expect(splitCommand("a &&  b ;; c |& d")).toEqual({ ok: true, commands: ["a", "b", "c", "d"] });
  });
});

describe("the exec decision: security × ask × allowlist", () => {
  it("deny refuses everything; full allows everything unless ask is always", () => {
    expect(decideExec(policy({ security: "deny", allowlist: ["*"] }), "ls", false)).toEqual({
      kind: "deny",
      reason: 'tools.exec.security is "deny"',
    });
    expect(decideExec(policy({ security: "full" }), "rm -rf build", false)).toEqual({ kind: "allow" });
    expect(decideExec(policy({ security: "full", ask: "always" }), "ls", false)).toEqual({
      kind: "ask",
      reason: 'tools.exec.ask is "always"',
    });
  });

  it("allowlist: a match runs, a miss asks (on-miss) or is refused (off); allow-always entries count as matches", () => {
    const p = policy({ allowlist: ["ls *"] });
    expect(decideExec(p, "ls -la", false)).toEqual({ kind: "allow" });
    expect(decideExec(p, "rm -rf build", false)).toEqual({
      kind: "ask",
      reason: '"rm -rf build" matches no tools.exec.allowlist pattern',
    });
    expect(decideExec({ ...p, ask: "off" }, "rm -rf build", false)).toEqual({
      kind: "deny",
      reason: '"rm -rf build" matches no tools.exec.allowlist pattern (tools.exec.ask is "off")',
    });
    expect(decideExec(p, "rm -rf build", true)).toEqual({ kind: "allow" });
    expect(decideExec({ ...p, ask: "always" }, "ls -la", true).kind).toBe("ask");
  });
});
