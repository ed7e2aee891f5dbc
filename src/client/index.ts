export { createDeviceIdentity, type DeviceIdentity, deviceIdentityFromKey } from "../protocol/device.js";
export { CONNECTION_CLOSED, GatewayConnectError, type GatewayConnectFailure, GatewayRequestError } from "./errors.js";
export { type FollowRunOptions, followRun, type RunFollow } from "./follow-run.js";
export {
  type AgentCallHandlers,
  type AgentCallParams,
  type ClientInfo,
  GatewayClient,
  type GatewayClientOptions,
} from "./gateway-client.js";
