/**
 * A looping tool agent on the emulator: `emu-m` asked for the ETH balance of several addresses, with parallel
 * tool calls off, calls `native_balance` once a turn (the planner never repeats a call), so each address is one
 * more model call and one more crypto RPC call, each paid from the run's budget.
 */
import { createAgent, type AgentMiddleware } from "langchain";
import { HumanMessage } from "@langchain/core/messages";
import type { BaseCheckpointSaver } from "@langchain/langgraph";
import { ChatService } from "../../src/chat/index.js";
import { ServiceClient } from "../../src/client.js";
import { CryptoRpcToolkit } from "../../src/crypto-rpc/index.js";

export const KEY = "agents-key";
export const ADDRESSES = [1, 2, 3, 4, 5, 6].map((i) => `0x${String(i).repeat(40)}`);
export const QUESTION = new HumanMessage(`What is the ETH balance of ${ADDRESSES.join(", ")} on base-mainnet?`);
/** room for the middleware's nodes around each of the loop's turns */
export const RUN = { recursionLimit: 100 };

/** the emulator (or its URL, from another process) */
export type Where = { url: string };

export function balanceTools(emu: Where) {
  const client = new ServiceClient({ apiKey: KEY, baseUrl: emu.url });
  return new CryptoRpcToolkit({ client }).getTools().filter((t) => t.name === "native_balance");
}

export function serviceModel(emu: Where) {
  return new ChatService({ model: "emu-m", apiKey: KEY, baseUrl: emu.url, maxTokens: 64, parallelToolCalls: false });
}

export function loopingAgent(emu: Where, middleware: AgentMiddleware[], checkpointer?: BaseCheckpointSaver) {
  return createAgent({ model: serviceModel(emu), tools: balanceTools(emu), middleware, checkpointer });
}
