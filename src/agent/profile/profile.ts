import type { LoopgateConfig } from "../../config/schema.js";
import type { AuthProfiles, RunAuthHooks, RunCredentials } from "../../credentials/index.js";
import type { Spender, RunLimits as SpendLimits } from "../../limits/budgets.js";
import type { ResolvedModel } from "../../providers/registry.js";
import type { ToolSpec } from "../../providers/types.js";
import type { RunSandbox as SandboxOfRun } from "../../tools/sandbox/types.js";
import type { Tool } from "../../tools/types.js";
import { agentTools } from "./agent-tools.js";
import { runModelChain } from "./model-chain.js";

/** The run's auth profile chooser (credentials/): a key per model call, pinned per session, rotated on failures. */
export type { RunCredentials };
/** The session's sandbox (where exec and the file tools run): tools/sandbox/. */
export type RunSandbox = SandboxOfRun;
/** Spend and usage limits for the run: its budgets, run caps and meter (limits/budgets.ts). */
export type RunLimits = SpendLimits;

/**
 * What one run may use, resolved once at prepare time and read by every phase after it: the agent's tools (built-in,
 * plugin and every ToolSource's, after its allow/deny lists), its model chain and its workspace. A snapshot: an MCP
 * server's catalog change or a plugin registered mid-run reaches the next run, not this one.
 */
export interface RunProfile {
  readonly agentId: string;
  /**
   * the config the run was prepared with: a config reloaded while it runs reaches the next run (SPEC 26), so what a
   * run reads of the config after prepare (max steps, retry policy, compaction) is read here, not from the runtime
   */
  readonly config: LoopgateConfig;
  /** the model the turn resolved: the first of `modelChain` */
  readonly model: ResolvedModel;
  /** the model refs the run may use, in order (the resolved model, then the fallbacks) */
  readonly modelChain: readonly string[];
  /** resolves a ref of the chain, or the compaction model, against the catalog the run was prepared with */
  resolveModel(ref: string): ResolvedModel;
  /** the real path file tools are confined to, exec's cwd */
  readonly workspaceDir: string;
  /** the tools the run may call, by name, in the order the model sees them */
  readonly tools: ReadonlyMap<string, Tool>;
  /** what goes into a model request for `tools`: name, description and parameters only */
  readonly toolSpecs: readonly ToolSpec[];
  /** tools that exist but the agent's lists withhold: a call to one is told so, not "unknown tool" */
  readonly withheld: ReadonlySet<string>;
  readonly credentials: RunCredentials | undefined;
  readonly sandbox: RunSandbox | undefined;
  readonly limits: RunLimits | undefined;
}

/** What the profile is resolved from (the runtime provides it; tests may hand in less). */
export interface ProfileSources {
  readonly config: LoopgateConfig;
  resolveModel(ref: string | undefined): ResolvedModel;
  workspaceFor(agentId: string): Promise<{ dir: string }>;
  /** every tool the agent could be given now (registry and tool sources), before its allow/deny lists */
  toolCatalog(agentId: string): Tool[];
  /** logs a warning the first time it is given (allow lists that match nothing would otherwise repeat every run) */
  warnOnce(message: string): void;
  /** the process's auth profiles; absent: runs use each provider's configured apiKey as is */
  readonly authProfiles?: AuthProfiles;
  /** the session's sandbox (made on first use), undefined when its runs are not sandboxed; absent: none is */
  sandboxFor?(agentId: string, sessionKey: string, workspaceDir: string): Promise<RunSandbox | undefined>;
  /** the run's spend limits (limits/spend-control.ts); absent where spend is not controlled (unit harnesses) */
  runLimits?(who: Spender): RunLimits | undefined;
}

/** Resolves the run's profile. Throws (before the run takes its session lock) when the model ref is unknown. */
export async function resolveRunProfile(
  from: ProfileSources,
  run: {
    agentId: string;
    modelRef: string;
    /** the session the run's key choice is pinned to (absent: no credentials, e.g. a profile for inspection) */
    sessionKey?: string;
    /** the run's own auth profile (`--auth-profile`), preferred while usable */
    authProfile?: string;
    authHooks?: RunAuthHooks;
    /** the token that started the run (spend limits per token) */
    token?: string;
  },
): Promise<RunProfile> {
  const model = from.resolveModel(run.modelRef);
  const workspace = await from.workspaceFor(run.agentId);
  const { tools, withheld, warnings } = agentTools(from.toolCatalog(run.agentId), from.config, run.agentId);
  for (const warning of warnings) from.warnOnce(warning);
  const sandbox =
    run.sessionKey !== undefined ? await from.sandboxFor?.(run.agentId, run.sessionKey, workspace.dir) : undefined;
  return {
    agentId: run.agentId,
    config: from.config,
    model,
    modelChain: runModelChain(from.config, run.agentId, model.ref),
    resolveModel: (ref) => (ref === model.ref ? model : from.resolveModel(ref)),
    workspaceDir: workspace.dir,
    tools,
    toolSpecs: [...tools.values()].map(({ name, description, parameters }) => ({ name, description, parameters })),
    withheld,
    credentials:
      from.authProfiles && run.sessionKey !== undefined && run.authHooks
        ? from.authProfiles.forRun({
            agentId: run.agentId,
            sessionKey: run.sessionKey,
            runPin: run.authProfile,
            hooks: run.authHooks,
          })
        : undefined,
    sandbox,
    limits:
      run.sessionKey !== undefined
        ? from.runLimits?.({
            agentId: run.agentId,
            sessionKey: run.sessionKey,
            ...(run.token !== undefined ? { token: run.token } : {}),
          })
        : undefined,
  };
}
