/**
 * A tool-calling agent (langchain's `createAgent` with ChatService on the emulator's `emu-m` model) answers
 * balance questions through the crypto tools, against a real local chain: the numbers in its answer come
 * from the chain, through the proxy.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Wallet, parseEther, parseUnits } from "ethers";
import { createAgent } from "langchain";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ChatService } from "../../src/chat/index.js";
import { CryptoRpcToolkit } from "../../src/crypto-rpc/index.js";
import { chainProvider, countingClient, transferUsdc } from "./helpers.js";

const KEY = "agent-key";
let emu: Emulator;
let holder: string;

beforeAll(async () => {
  emu = await startEmulator({ chain: true, apiKeys: [KEY] });
  const chain = emu.chain!;
  // a fresh address with a distinctive balance: 1.5 ETH and 42.25 USDC
  holder = Wallet.createRandom().address;
  const provider = chainProvider(chain);
  const funder = new Wallet(chain.accounts[0]!.privateKey, provider);
  await (await funder.sendTransaction({ to: holder, value: parseEther("1.5") })).wait();
  provider.destroy();
  await transferUsdc(chain, 0, holder, parseUnits("42.25", 6));
});
afterAll(async () => {
  await emu?.close();
});

describe("a tool-calling agent", () => {
  it("answers a native balance question through the tools", async () => {
    const { client, counts } = countingClient(emu, KEY);
    const tools = new CryptoRpcToolkit({ client }).getTools();
    const agent = createAgent({ model: new ChatService({ model: "emu-m", apiKey: KEY, baseUrl: emu.url }), tools });
    const result = await agent.invoke({ messages: [new HumanMessage(`What is the ETH balance of ${holder} on base-mainnet?`)] });
    const messages = result.messages;
    const toolMessages = messages.filter((m): m is ToolMessage => m instanceof ToolMessage);
    const balanceAnswer = toolMessages.find((m) => m.name === "native_balance");
    expect(balanceAnswer, "the agent called native_balance").toBeDefined();
    expect(JSON.parse(balanceAnswer!.content as string).balance).toEqual({
      wei: parseEther("1.5").toString(),
      formatted: "1.5",
      symbol: "ETH",
    });
    expect(balanceAnswer!.artifact).toMatchObject({ network: "base-mainnet", request: { method: "eth_getBalance" } });
    const final = messages.at(-1) as AIMessage;
    expect(final).toBeInstanceOf(AIMessage);
    expect(final.tool_calls ?? []).toHaveLength(0);
    expect(String(final.content)).toContain("1.5");
    expect(counts["/crypto/rpc/base-mainnet"]).toBeGreaterThanOrEqual(1);
  });

  it("answers a token balance question with the token's symbol and decimals", async () => {
    const { client } = countingClient(emu, KEY);
    const tools = new CryptoRpcToolkit({ client }).getTools().filter((t) => t.name === "erc20_balance");
    const agent = createAgent({ model: new ChatService({ model: "emu-m", apiKey: KEY, baseUrl: emu.url }), tools });
    // values quoted: the emulated planner reads an unquoted "0x..." after "token:" as the number 0
    const question = `How much USDC does the owner hold on base-mainnet? owner: "${holder}" token: "${emu.chain!.usdc.address}"`;
    const result = await agent.invoke({ messages: [new HumanMessage(question)] });
    const toolMessages = result.messages.filter((m): m is ToolMessage => m instanceof ToolMessage);
    const answers = toolMessages.map((m) => JSON.parse(m.content as string));
    const hit = answers.find((a) => a.owner === holder && a.symbol === "USDC");
    expect(hit, JSON.stringify(answers)).toBeDefined();
    expect(hit.balance).toEqual({ raw: "42250000", formatted: "42.25" });
    expect(String(result.messages.at(-1)!.content)).toContain("42.25");
  });
});
