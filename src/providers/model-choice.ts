import type { LoopgateConfig } from "../config/schema.js";
import { ModelResolutionError } from "./registry.js";

/*
 * A model someone chooses (--model, an agent request's `model`, sessions.patch / sessions.create `model`, a cron
 * job's `model`) as OpenClaw reads it: an alias from agents.defaults.models, "provider/model", or a bare model id
 * that exactly one configured provider lists. When agents.defaults.models is not empty it is the allowlist: a model
 * outside it is refused ("Model ... is not allowed", as OpenClaw says). Configured defaults (agents.defaults.model,
 * agents.list[].model) are the operator's own choice and are not checked against it, as in OpenClaw.
 */

type ModelConfig = { agents: { defaults: Pick<LoopgateConfig["agents"]["defaults"], "models"> } } & {
  models: Pick<LoopgateConfig["models"], "providers">;
};

/** The canonical "provider/model" for `input`, or a ModelResolutionError saying what was wrong. */
export function chooseModel(config: ModelConfig, input: string): string {
  const wanted = input.trim();
  const catalog = config.agents.defaults.models ?? {};
  const ref = aliasTarget(catalog, wanted) ?? (wanted.includes("/") ? wanted : bareModelRef(config, wanted, catalog));
  const allowed = Object.keys(catalog);
  if (allowed.length > 0 && !isAllowed(allowed, ref)) {
    throw new ModelResolutionError(
      `model "${ref}" is not allowed: agents.defaults.models lists ${allowed.map(describeEntry(catalog)).join(", ")}`,
    );
  }
  return ref;
}

/** Aliases match without regard to case: they are typed on command lines and in chats. */
function aliasTarget(catalog: Record<string, { alias?: string }>, wanted: string): string | undefined {
  const lower = wanted.toLowerCase();
  for (const [ref, entry] of Object.entries(catalog)) {
    if (entry.alias?.toLowerCase() === lower && !ref.endsWith("/*")) return ref;
  }
  return undefined;
}

/** A bare id: the one configured provider that lists it; none or several is an error naming what there is. */
function bareModelRef(config: ModelConfig, id: string, catalog: Record<string, { alias?: string }>): string {
  const candidates = Object.entries(config.models.providers)
    .filter(([, provider]) => provider.models.some((m) => m.id === id))
    .map(([providerId]) => `${providerId}/${id}`);
  if (candidates.length === 1) return candidates[0];
  if (candidates.length > 1) {
    throw new ModelResolutionError(`model "${id}" is ambiguous: ${candidates.join(", ")}; name one of them`);
  }
  const aliases = Object.values(catalog).flatMap((e) => (e.alias ? [e.alias] : []));
  throw new ModelResolutionError(
    `unknown model "${id}": expected "<provider>/<model>", an alias (${aliases.length ? aliases.join(", ") : "none configured"}) or a model id listed under models.providers`,
  );
}

function isAllowed(allowed: string[], ref: string): boolean {
  const provider = ref.slice(0, ref.indexOf("/"));
  return allowed.includes(ref) || allowed.includes(`${provider}/*`);
}

function describeEntry(catalog: Record<string, { alias?: string }>): (ref: string) => string {
  return (ref) => (catalog[ref]?.alias ? `${ref} (${catalog[ref].alias})` : ref);
}
