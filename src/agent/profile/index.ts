export { type AgentTools, agentTools } from "./agent-tools.js";
export { runModelChain } from "./model-chain.js";
export {
  type ProfileSources,
  type RunCredentials,
  type RunLimits,
  type RunProfile,
  type RunSandbox,
  resolveRunProfile,
} from "./profile.js";
