/**
 * Whether an `exec` command may run, asks first, or is refused (`tools.exec.security` / `ask` / `allowlist`).
 * Pure: no I/O, no clock. The approvals module (agent/exec-approvals.ts) does the asking.
 *
 * What an allowlist pattern is matched against: the command is split at its unquoted control operators (`;`, `&`,
 * `&&`, `|`, `||`, `|&`, newline) into simple commands, and EVERY one of them must match some pattern. So
 * `git status && rm -rf x` does not pass on `git *`: `rm -rf x` must match a pattern too. A pattern is a glob over
 * the whole simple command (whitespace runs count as one space): `*` is any run of characters, `?` one character,
 * except that neither matches `<` or `>`, so a redirection must be spelled out in the pattern (`npm test 2>&1`).
 * A pattern ending in ` *` also matches the bare command (`git *` matches `git`). A command that substitutes
 * another (`$(…)`, backticks, `<(…)`, `>(…)`) or has an unterminated quote never matches: what it runs is only
 * known once the shell expands it.
 */

import type { execAskModes, execSecurityModes } from "../config/constants.js";

export type ExecSecurity = (typeof execSecurityModes)[number];
export type ExecAsk = (typeof execAskModes)[number];

export interface ExecPolicy {
  security: ExecSecurity;
  ask: ExecAsk;
  /** glob patterns (see above) */
  allowlist: readonly string[];
}

export type ExecDecision =
  | { kind: "allow" }
  /** the reason is shown to the model after "exec denied: " */
  | { kind: "deny"; reason: string }
  /** an operator (or the terminal) decides; the reason says why it was not allowed outright */
  | { kind: "ask"; reason: string };

/**
 * The decision for one command. `approvedAlways` tells whether an operator answered `allow-always` for exactly this
 * command before (it counts as an allowlist entry).
 */
export function decideExec(policy: ExecPolicy, command: string, approvedAlways: boolean): ExecDecision {
  if (policy.security === "deny") return { kind: "deny", reason: 'tools.exec.security is "deny"' };
  if (policy.ask === "always") return { kind: "ask", reason: 'tools.exec.ask is "always"' };
  if (policy.security === "full") return { kind: "allow" };
  if (approvedAlways) return { kind: "allow" };
  const match = matchAllowlist(command, policy.allowlist);
  if (match.ok) return { kind: "allow" };
  if (policy.ask === "on-miss") return { kind: "ask", reason: match.reason };
  return { kind: "deny", reason: `${match.reason} (tools.exec.ask is "off")` };
}

export type AllowlistMatch = { ok: true } | { ok: false; reason: string };

/** Every simple command of `command` matches one of `patterns`; otherwise the first reason it does not. */
export function matchAllowlist(command: string, patterns: readonly string[]): AllowlistMatch {
  const parsed = splitCommand(command);
  if (!parsed.ok) return { ok: false, reason: parsed.reason };
  const compiled = patterns.map(compilePattern);
  for (const part of parsed.commands) {
    if (!compiled.some((re) => re.test(part))) {
      return { ok: false, reason: `"${part}" matches no tools.exec.allowlist pattern` };
    }
  }
  return { ok: true };
}

/** The form a command is compared in: trimmed, whitespace runs as one space (allow-always entries use it too). */
export function normalizeCommand(text: string): string {
  return text.trim().replace(/\s+/g, " ");
}

export type SplitCommand = { ok: true; commands: string[] } | { ok: false; reason: string };

/**
 * Splits a shell command at its unquoted control operators. Quotes and backslashes are followed only as far as
 * needed to find those operators and substitutions; the parts keep their text as written.
 */
export function splitCommand(command: string): SplitCommand {
  const commands: string[] = [];
  let current = "";
  const push = () => {
    const part = normalizeCommand(current);
    if (part !== "") commands.push(part);
    current = "";
  };
  const substitution = {
    ok: false as const,
    reason: "a command substitution ($(…), `…`, <(…), >(…)) is never allowlisted",
  };
  let i = 0;
  while (i < command.length) {
    const c = command[i];
    const next = command[i + 1];
    if (c === "'") {
      const end = command.indexOf("'", i + 1);
      if (end < 0) return { ok: false, reason: "the command has an unterminated quote" };
      current += command.slice(i, end + 1);
      i = end + 1;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      while (j < command.length && command[j] !== '"') {
        if (command[j] === "\\") j++;
        else if (command[j] === "`" || (command[j] === "$" && command[j + 1] === "(")) return substitution;
        j++;
      }
      if (j >= command.length) return { ok: false, reason: "the command has an unterminated quote" };
      current += command.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (c === "\\") {
      current += command.slice(i, i + 2);
      i += 2;
      continue;
    }
    if (c === "`" || (c === "$" && next === "(") || ((c === "<" || c === ">") && next === "(")) return substitution;
    // `>&2`, `2>&1`, `<&3`: a redirection, not a background operator
    if ((c === ">" || c === "<") && next === "&") {
      current += c + next;
      i += 2;
      continue;
    }
    if (c === ";" || c === "&" || c === "|" || c === "\n") {
      push();
      // the second character of `&&`, `||`, `|&`, `;;`
      i += next === "&" || next === "|" || (c === ";" && next === ";") ? 2 : 1;
      continue;
    }
    current += c;
    i++;
  }
  push();
  if (commands.length === 0) return { ok: false, reason: "the command is empty" };
  return { ok: true, commands };
}

function compilePattern(pattern: string): RegExp {
  let glob = normalizeCommand(pattern);
  // `git *` also matches a bare `git`
  const optionalArgs = glob.endsWith(" *");
  if (optionalArgs) glob = glob.slice(0, -2);
  let source = "";
  for (const ch of glob) {
    if (ch === "*") source += "[^<>]*";
    else if (ch === "?") source += "[^<>]";
    else source += ch.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  }
  return new RegExp(`^${source}${optionalArgs ? "(?: [^<>]*)?" : ""}$`, "s");
}
