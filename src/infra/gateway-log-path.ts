import path from "node:path";

/** `<stateDir>/logs/gateway.log`: written by `loopgate gateway`, read by `loopgate logs` and logs.tail. */
export function gatewayLogPath(stateDir: string): string {
  return path.join(stateDir, "logs", "gateway.log");
}
