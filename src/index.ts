export * from "./config.js";
export * from "./http/index.js";
