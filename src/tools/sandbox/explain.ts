import path from "node:path";
import type { LoopgateConfig } from "../../config/schema.js";
import type { ExecPolicy } from "../exec-policy.js";
import { type EffectiveExecPolicy, effectiveExecPolicy } from "./exec-policy.js";
import { decideSandbox, type SandboxSettings, sandboxSettings } from "./settings.js";
import { type RunSandbox, SANDBOX_WORKDIR } from "./types.js";

/** `loopgate sandbox explain`: what a session's runs get, from the config alone. */
export interface SandboxExplanation {
  agentId: string;
  sessionKey: string;
  sandboxed: boolean;
  why: string;
  backend?: SandboxSettings["backend"];
  scope?: SandboxSettings["scope"];
  scopeKey?: string;
  dir?: string;
  workspaceAccess?: SandboxSettings["workspaceAccess"];
  network?: SandboxSettings["network"];
  /** what the backend enforces of the limits, and what it cannot */
  limits: string[];
  execPolicy: { security: string; ask: string; reason: string };
  /** where each tool runs */
  tools: { inside: string[]; gatewaySide: string[] };
}

export function explainSandbox(
  config: LoopgateConfig,
  opts: { agentId: string; sessionKey: string; scopeKey: (s: SandboxSettings) => string; root: string },
  processPolicy: ExecPolicy,
): SandboxExplanation {
  const s = sandboxSettings(config, opts.agentId);
  const decision = decideSandbox(s, opts.agentId, opts.sessionKey);
  // the policy as a run would get it: only whether the run is sandboxed and its network matter here
  const asRun = decision.sandboxed
    ? ({ network: s.network, sandbox: { backend: s.backend } } as unknown as RunSandbox)
    : undefined;
  const policy: EffectiveExecPolicy = effectiveExecPolicy(
    processPolicy,
    config.tools.exec.security !== undefined,
    decision,
    asRun,
  );
  const execPolicy = { security: policy.policy.security, ask: policy.policy.ask, reason: policy.reason };
  const gatewaySide = ["message", "plugin tools", "MCP tools"];
  if (!decision.sandboxed) {
    return {
      agentId: opts.agentId,
      sessionKey: opts.sessionKey,
      sandboxed: false,
      why: decision.why,
      limits: [],
      execPolicy,
      tools: { inside: [], gatewaySide: ["exec (on the host)", "read", "write", "edit", ...gatewaySide] },
    };
  }
  const scopeKey = opts.scopeKey(s);
  return {
    agentId: opts.agentId,
    sessionKey: opts.sessionKey,
    sandboxed: true,
    why: decision.why,
    backend: s.backend,
    scope: s.scope,
    scopeKey,
    dir: path.join(opts.root, scopeKey),
    workspaceAccess: s.workspaceAccess,
    network: s.network,
    limits: limitsOf(s),
    execPolicy,
    tools: { inside: ["exec", "read", "write", "edit"], gatewaySide },
  };
}

/** What each backend enforces of the limits: said plainly, so nobody believes in a limit that is not there. */
function limitsOf(s: SandboxSettings): string[] {
  const out: string[] = [];
  if (s.timeoutSeconds !== undefined)
    out.push(`timeoutSeconds ${s.timeoutSeconds}: each exec command is killed after it`);
  if (s.backend === "bubblewrap") {
    if (s.memoryMb !== undefined) out.push(`memoryMb ${s.memoryMb}: an address-space cap per process (ulimit -v)`);
    out.push("pids, cpus: not enforced by bubblewrap (no cgroups); use docker for them");
  } else {
    if (s.memoryMb !== undefined) out.push(`memoryMb ${s.memoryMb}: the container's memory (--memory)`);
    if (s.pids !== undefined) out.push(`pids ${s.pids}: the container's process limit (--pids-limit)`);
    if (s.cpus !== undefined) out.push(`cpus ${s.cpus}: the container's CPU share (--cpus)`);
  }
  return out;
}

export function formatExplanation(e: SandboxExplanation): string {
  const lines = [`agent ${e.agentId}, session ${e.sessionKey}`];
  if (!e.sandboxed) {
    lines.push(`  not sandboxed: ${e.why}`);
  } else {
    lines.push(`  sandboxed: ${e.why}`);
    lines.push(
      `  backend ${e.backend} · scope ${e.scope} (${e.scopeKey}) · workspace ${e.workspaceAccess} at ${SANDBOX_WORKDIR} · network ${e.network}`,
    );
    lines.push(`  dir ${e.dir}`);
    for (const l of e.limits) lines.push(`  limit: ${l}`);
  }
  lines.push(`  exec policy: security "${e.execPolicy.security}", ask "${e.execPolicy.ask}" — ${e.execPolicy.reason}`);
  if (e.tools.inside.length) lines.push(`  inside the sandbox: ${e.tools.inside.join(", ")}`);
  lines.push(`  in the gateway: ${e.tools.gatewaySide.join(", ")}`);
  return lines.join("\n");
}
