import type { ExecPolicy } from "../exec-policy.js";
import type { SandboxDecision } from "./settings.js";
import type { RunSandbox } from "./types.js";

/** The exec policy a run uses and why: shown with an approval request, its `waiting` event and `sandbox explain`. */
export interface EffectiveExecPolicy {
  policy: ExecPolicy;
  sandboxed: boolean;
  /** one line, e.g. `sandboxed (bubblewrap, network none): security "full" without asking, the sandbox is the boundary` */
  reason: string;
}

/**
 * A run sandboxed with no network runs exec with security "full" unless tools.exec.security is set in the config:
 * the sandbox is the boundary, and asking about `echo hi` would only train operators to approve blindly. A sandbox
 * with the host's network keeps the process default (it can reach what the gateway reaches), as does a run that is
 * not sandboxed.
 */
export function effectiveExecPolicy(
  base: ExecPolicy,
  securityInConfig: boolean,
  decision: SandboxDecision,
  sandbox: RunSandbox | undefined,
): EffectiveExecPolicy {
  const security = `tools.exec.security "${base.security}"`;
  if (!sandbox) {
    return {
      policy: base,
      sandboxed: false,
      reason: `not sandboxed (${decision.why}): ${security}${securityInConfig ? "" : " (the default)"}`,
    };
  }
  const where = `sandboxed (${sandbox.sandbox.backend}, network ${sandbox.network})`;
  if (securityInConfig) return { policy: base, sandboxed: true, reason: `${where}: ${security} is set in the config` };
  if (sandbox.network === "host") {
    return {
      policy: base,
      sandboxed: true,
      reason: `${where}: ${security} (the default; a sandbox on the host's network is no boundary for it)`,
    };
  }
  return {
    policy: { ...base, security: "full" },
    sandboxed: true,
    reason: `${where}: security "full" by default, the sandbox is the boundary`,
  };
}
