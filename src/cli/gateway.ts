import { CliError } from "./exit-codes.js";

export async function runGatewayCli(_opts: Record<string, unknown>): Promise<number> {
  throw new CliError("the gateway is not built yet");
}
