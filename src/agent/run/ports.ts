import type { ProfileSources } from "../profile/profile.js";
import type { AgentRuntime } from "../runtime.js";

/**
 * The infrastructure the run phases reach: config, store, bus, clock, logs, hooks, session locks, approvals and
 * provider instances. What a run may use (its tools, models and workspace) is not here: it is the run's RunProfile,
 * resolved at prepare (agent/profile/).
 */
export type RunPorts = Pick<
  AgentRuntime,
  | "config"
  | "store"
  | "bus"
  | "clock"
  | "logger"
  | "env"
  | "pluginHooks"
  | "fireInternal"
  | "internalHooks"
  | "history"
  | "bootstrap"
  | "sessionLocks"
  | "sessionEvents"
  | "execApprovals"
  | "getProvider"
  | "isSelfHosted"
  | "onPrivateNetwork"
  | "runBeat"
  | "modelCalls"
  | "modelCallMeter"
  | "spend"
>;

/** What a turn needs besides: its lanes, the runtime's lazy init, the agent's model ref, and the profile's sources. */
export type TurnPorts = RunPorts &
  ProfileSources &
  Pick<AgentRuntime, "lanes" | "init" | "agentModelRef" | "sessionLifecycle" | "enabledOverrides">;
