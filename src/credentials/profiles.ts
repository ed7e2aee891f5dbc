/**
 * Auth profiles from config (SPEC 23): `auth.profiles.<provider:name>`, and a provider's plain `apiKey` as the implicit
 * `<provider>:default`. Load-time problems (unknown provider, a key that cannot be read, an order naming no profile)
 * are listed with their key paths by `authProfileProblems` (config/check.ts); `resolveAuthProfiles` reads the keys.
 * A key lives only in the ResolvedAuthProfile's closure: nothing here logs, formats or returns it elsewhere.
 */
import fs from "node:fs";
import { ConfigError } from "../config/errors.js";
import type { AuthProfileConfig, LoopgateConfig } from "../config/schema.js";

export interface AuthProfile {
  /** "provider:name" */
  readonly id: string;
  readonly provider: string;
  readonly mode: "api_key" | "token";
  /** true for `<provider>:default`, made from models.providers.<provider>.apiKey */
  readonly implicit: boolean;
}

/** A profile and the means to read its key; the key itself is never a property (a spread or a log cannot copy it). */
export interface ResolvedAuthProfile extends AuthProfile {
  key(): string;
}

/** What the profile list is made from: the provider apiKeys first (each the provider's `default`), then auth.profiles. */
function declared(
  config: LoopgateConfig,
): Array<{ id: string; at: string; provider: string; profile: AuthProfileConfig }> {
  const out: Array<{ id: string; at: string; provider: string; profile: AuthProfileConfig }> = [];
  for (const [provider, p] of Object.entries(config.models.providers)) {
    if (p.apiKey === undefined || p.api === "scripted") continue;
    out.push({
      id: `${provider}:default`,
      at: `models.providers.${provider}.apiKey`,
      provider,
      profile: { provider, mode: "api_key", key: p.apiKey },
    });
  }
  for (const [id, profile] of Object.entries(config.auth.profiles)) {
    out.push({ id, at: `auth.profiles.${id}`, provider: profile.provider, profile });
  }
  return out;
}

/** Every problem of the auth config, each naming its key path; empty when the profiles can be resolved. */
export function authProfileProblems(config: LoopgateConfig, env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  const providers = Object.keys(config.models.providers);
  const known = providers.length ? providers.join(", ") : "none";
  const byId = new Map<string, string>();
  for (const d of declared(config)) {
    const first = byId.get(d.id);
    if (first !== undefined) {
      problems.push(`${d.at}: duplicate auth profile id "${d.id}" (${first} is already that profile)`);
      continue;
    }
    byId.set(d.id, d.at);
    // a provider's apiKey is checked with the provider (config/check.ts providerProblems)
    if (d.at.startsWith("models.")) continue;
    if (!providers.includes(d.provider)) {
      problems.push(`${d.at}.provider: unknown provider "${d.provider}" (configured: ${known})`);
    } else if (!d.id.startsWith(`${d.provider}:`)) {
      problems.push(`${d.at}: the id must start with its provider ("${d.provider}:…")`);
    }
    const keyProblem = readKey(d.profile, env).problem;
    if (keyProblem) problems.push(`${d.at}.${keyProblem}`);
  }
  const checkOrder = (order: Record<string, string[]>, at: string) => {
    for (const [provider, ids] of Object.entries(order)) {
      if (!providers.includes(provider)) {
        problems.push(`${at}.${provider}: unknown provider "${provider}" (configured: ${known})`);
        continue;
      }
      ids.forEach((id, i) => {
        if (!byId.has(id)) problems.push(`${at}.${provider}[${i}]: unknown auth profile "${id}"`);
        else if (!id.startsWith(`${provider}:`)) {
          problems.push(`${at}.${provider}[${i}]: "${id}" is not a profile of provider "${provider}"`);
        }
      });
    }
  };
  checkOrder(config.auth.order, "auth.order");
  config.agents.list.forEach((agent, i) => {
    if (agent.auth) checkOrder(agent.auth.order, `agents.list[${i}].auth.order`);
  });
  return problems;
}

/** Every profile with its key reader, in declaration order. Throws ConfigError when the config has problems. */
export function resolveAuthProfiles(config: LoopgateConfig, env: NodeJS.ProcessEnv): ResolvedAuthProfile[] {
  const problems = authProfileProblems(config, env);
  if (problems.length > 0) throw new ConfigError(problems);
  const profiles: ResolvedAuthProfile[] = [];
  for (const { id, at, provider, profile } of declared(config)) {
    const { key } = readKey(profile, env);
    // a provider's apiKey naming an unset variable is the provider's problem, said when it is first used (as before
    // auth profiles): without a key it is no profile
    if (key === undefined) continue;
    profiles.push({ id, provider, mode: profile.mode, implicit: at.startsWith("models."), key: () => key });
  }
  return profiles;
}

/** The key of a profile, or the problem reading it ("key: …" / "keyRef…: …", to follow the profile's path). */
function readKey(profile: AuthProfileConfig, env: NodeJS.ProcessEnv): { key?: string; problem?: string } {
  if (profile.key !== undefined) {
    const unset = unsetEnvRefs(profile.key, env);
    if (unset.length > 0) return { problem: `key: references \${${unset[0]}}, which is not set in the environment` };
    return { key: profile.key.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => env[name] ?? "") };
  }
  const ref = profile.keyRef;
  if (ref?.source === "env") {
    const value = env[ref.id];
    return value ? { key: value } : { problem: `keyRef.id: the environment variable ${ref.id} is not set` };
  }
  if (ref?.source === "file") {
    let text: string;
    try {
      text = fs.readFileSync(ref.path, "utf8").trim();
    } catch (err) {
      return { problem: `keyRef.path: cannot read ${ref.path} (${(err as NodeJS.ErrnoException).code ?? "error"})` };
    }
    return text ? { key: text } : { problem: `keyRef.path: ${ref.path} is empty` };
  }
  return { problem: "key: missing" };
}

function unsetEnvRefs(value: string | undefined, env: NodeJS.ProcessEnv): string[] {
  if (!value) return [];
  return [...value.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]).filter((name) => !env[name]);
}
