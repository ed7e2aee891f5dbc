export * from "./agent-events.js";
export * from "./device.js";
export * from "./enums.js";
export * from "./frames.js";
export * from "./params.js";
export * from "./payloads.js";
export * from "./run.js";
export * from "./version.js";
