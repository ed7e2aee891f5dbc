import type { AgentCliOptions } from "./agent.js";
import { CliError } from "./exit-codes.js";

export async function runAgentRemote(_opts: AgentCliOptions): Promise<number> {
  throw new CliError("the gateway client is not built yet: use --local");
}
