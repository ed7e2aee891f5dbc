export * from "./front-matter.js";
export * from "./install.js";
export * from "./internal.js";
export * from "./logger.js";
export * from "./plugin-hooks.js";
export * from "./plugins.js";
