/**
 * langchain-service: the LangChain.js chat model and embeddings, the plain API client, wallet sign-in and
 * self-paying top-ups (x402), crypto JSON-RPC tools and web, image and speech tools, over one fetch stack.
 * The local service emulator is its own package: `langchain-service-emulator`.
 */
export * from "./config.js";
export * from "./http/index.js";
export * from "./stack.js";
export * from "./client.js";
export * from "./models/index.js";
export * from "./chat/index.js";
export * from "./crypto-rpc/index.js";
export * from "./embeddings/index.js";
export * from "./tools/index.js";
export * from "./media/index.js";
export * from "./account/index.js";
export * from "./x402/index.js";
export * from "./store/index.js";
export * from "./spend/index.js";
export * from "./agents/index.js";
