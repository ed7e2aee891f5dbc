export * from "./device.js";
export * from "./frames.js";
export * from "./params.js";
export * from "./payloads.js";
export * from "./version.js";
