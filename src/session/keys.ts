/**
 * Session keys. Forms: `agent:<agentId>:<rest>` (default `agent:main:main`), `cron:<jobId>`, `hook:<uuid>`,
 * `global`. Anything else is scoped to the run's agent (`support-42` → `agent:<agentId>:support-42`).
 * A malformed `agent:` key is an error — never silently the default agent.
 */

import { CONTROL_CHARACTERS_MESSAGE, hasControlCharacter } from "../protocol/control-chars.js";

export const DEFAULT_AGENT_ID = "main";
export const DEFAULT_SESSION_KEY = "agent:main:main";

const agentIdPattern = /^[a-z0-9][a-z0-9_-]{0,63}$/i;

export class SessionKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SessionKeyError";
  }
}

export interface ParsedSessionKey {
  key: string;
  kind: "agent" | "cron" | "hook" | "global";
  /** the agent the session belongs to (cron/hook/global sessions run under the requesting agent) */
  agentId: string;
  rest: string;
}

export function isValidAgentId(id: string): boolean {
  return agentIdPattern.test(id);
}

export function normalizeSessionKey(raw: string | undefined, agentId: string = DEFAULT_AGENT_ID): ParsedSessionKey {
  if (!isValidAgentId(agentId)) throw new SessionKeyError(`invalid agent id "${agentId}"`);
  const key = (raw ?? "").trim();
  if (key === "") return { key: `agent:${agentId}:main`, kind: "agent", agentId, rest: "main" };
  // before the whitespace check, whose message quotes the key: a NUL or an escape sequence is not echoed (a tab or a
  // newline is whitespace, and is reported as such)
  if (hasControlCharacter(key.replace(/\s/g, "")))
    throw new SessionKeyError(`invalid session key: ${CONTROL_CHARACTERS_MESSAGE}`);
  if (/\s/.test(key)) throw new SessionKeyError(`invalid session key "${key}": whitespace is not allowed`);
  if (key.length > 512) throw new SessionKeyError("invalid session key: longer than 512 characters");
  if (key === "global") return { key, kind: "global", agentId, rest: "" };
  if (key.startsWith("agent:")) {
    const [, id, ...restParts] = key.split(":");
    const rest = restParts.join(":");
    if (!id || !isValidAgentId(id)) {
      throw new SessionKeyError(
        `invalid session key "${key}": expected agent:<agentId>:<name>, agent id is missing or invalid`,
      );
    }
    if (!rest)
      throw new SessionKeyError(`invalid session key "${key}": expected agent:<agentId>:<name>, name is missing`);
    return { key, kind: "agent", agentId: id, rest };
  }
  for (const prefix of ["cron", "hook"] as const) {
    if (key.startsWith(`${prefix}:`)) {
      const rest = key.slice(prefix.length + 1);
      if (!rest) throw new SessionKeyError(`invalid session key "${key}": expected ${prefix}:<id>`);
      return { key, kind: prefix, agentId, rest };
    }
  }
  return { key: `agent:${agentId}:${key}`, kind: "agent", agentId, rest: key };
}

/** The lane every run of a session goes through first. */
export function sessionLaneName(sessionKey: string): string {
  return `session:${sessionKey}`;
}
