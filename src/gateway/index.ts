export { isLoopbackHost, resolveBindHost, wsUrl } from "./bind.js";
export { GatewayError, GatewayStartError } from "./errors.js";
export {
  DEFAULT_CHAT_DELTA_INTERVAL_MS,
  DEFAULT_HANDSHAKE_TIMEOUT_MS,
  type GatewayHandle,
  type GatewayOptions,
  type GatewayStartInfo,
  startGateway,
} from "./server.js";
