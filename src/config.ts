/** The options, env vars and brand wire names live with the transport (src/http/config.ts); kept here for the faces. */
export * from "./http/config.js";
