export { type DeviceIdentity, createDeviceIdentity, deviceIdentityFromKey } from "../protocol/device.js";
export {
  type AgentCallHandlers,
  type AgentCallParams,
  type ClientInfo,
  GatewayClient,
  type GatewayClientOptions,
} from "./gateway-client.js";
export { CONNECTION_CLOSED, GatewayConnectError, type GatewayConnectFailure, GatewayRequestError } from "./errors.js";
