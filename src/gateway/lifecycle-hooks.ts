/**
 * The gateway's own life as hooks: `gateway_start` / `gateway_stop` (plugin observers) and `gateway:startup` /
 * `gateway:shutdown` (internal hooks). Fired by the gateway itself (server.ts, services.ts), not by the CLI, so an
 * app that embeds Loopgate with `startGateway()` gets them too, once each.
 */
import type { AgentRuntime } from "../agent/runtime.js";

type HookPorts = Pick<AgentRuntime, "pluginHooks" | "fireInternal">;

/** Once plugins are loaded and the port listens. */
export async function fireGatewayStart(rt: HookPorts, port: number): Promise<void> {
  await Promise.all([
    rt.pluginHooks.has("gateway_start") ? rt.pluginHooks.runObservers("gateway_start", { port }) : undefined,
    rt.fireInternal("gateway", "startup", { port }),
  ]);
}

/** After the drain, before sockets and the store close. */
export async function fireGatewayStop(rt: HookPorts, reason: string): Promise<void> {
  await Promise.all([
    rt.pluginHooks.has("gateway_stop") ? rt.pluginHooks.runObservers("gateway_stop", { reason }) : undefined,
    rt.fireInternal("gateway", "shutdown", { reason }),
  ]);
}
