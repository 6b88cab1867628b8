/**
 * A tool-calling blockchain agent with an API key: langchain's `createAgent` with `ChatService` and the
 * read-only crypto tools (`CryptoRpcToolkit`), which read chains through the service's JSON-RPC proxy.
 *
 * Against the embedded emulator a local chain stands in for base-mainnet: the example funds a fresh address
 * with 1.5 ETH and 42.25 USDC, asks the agent, and checks its answer against the node directly.
 *
 *   npm run example:blockchain-agent
 *   SERVICE_BASE_URL=https://.../api/v1 SERVICE_API_KEY=... SERVICE_MODEL=... ADDRESS=0x... npm run example:blockchain-agent
 */
import { pathToFileURL } from "node:url";
import { Contract, JsonRpcProvider, Network, Wallet, formatEther, formatUnits, parseEther, parseUnits } from "ethers";
import { createAgent } from "langchain";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";
import { ChatService, CryptoRpcToolkit, ServiceClient, USDC_BASE } from "../src/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";

export interface Options {
  baseUrl?: string;
  apiKey?: string;
  log?: (line: string) => void;
}

export interface Result {
  question: string;
  answer: string;
  /** what each tool returned (parsed JSON) */
  toolResults: { name: string; result: unknown }[];
  /** embedded run: the balances read from the local node directly, to compare with the answer */
  onChain?: { eth: string; usdc: string };
}

const ERC20 = ["function transfer(address to, uint256 amount) returns (bool)", "function balanceOf(address) view returns (uint256)"];

/** Embedded run only: give a fresh address a recognisable balance on the local chain. */
async function fundFreshAddress(emulator: Emulator): Promise<{ address: string; onChain: { eth: string; usdc: string } }> {
  const chain = emulator.chain!;
  const provider = new JsonRpcProvider(chain.rpcUrl, Network.from(chain.chainId), { staticNetwork: true, cacheTimeout: -1 }); // no stale nonces between the two sends
  try {
    const funder = new Wallet(chain.accounts[0]!.privateKey, provider);
    const address = Wallet.createRandom().address;
    await (await funder.sendTransaction({ to: address, value: parseEther("1.5") })).wait();
    const usdc = new Contract(chain.usdc.address, ERC20, funder);
    await (await usdc.getFunction("transfer")(address, parseUnits("42.25", 6))).wait();
    const eth = formatEther(await provider.getBalance(address));
    const usdcBalance = formatUnits((await usdc.getFunction("balanceOf")(address)) as bigint, 6);
    return { address, onChain: { eth, usdc: usdcBalance } };
  } finally {
    provider.destroy();
  }
}

export async function main(options: Options = {}): Promise<Result> {
  const log = options.log ?? console.log;
  let baseUrl = options.baseUrl ?? process.env.SERVICE_BASE_URL;
  let apiKey = options.apiKey ?? process.env.SERVICE_API_KEY;
  // `chain: true`: a local EVM chain (ganache) behind the emulator's crypto RPC proxy
  const emulator = baseUrl ? undefined : await startEmulator({ chain: true, apiKeys: [{ key: "example-key", usd: 5 }] });
  if (emulator) [baseUrl, apiKey] = [emulator.url, "example-key"];
  try {
    let address = process.env.ADDRESS ?? "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045";
    const token = USDC_BASE; // the emulator's test USDC lives at the real address too
    let onChain: Result["onChain"];
    if (emulator) ({ address, onChain } = await fundFreshAddress(emulator));

    const client = new ServiceClient({ baseUrl, apiKey });
    const tools = new CryptoRpcToolkit({ client }).getTools(); // read-only unless `allowWrites: true`
    const model = new ChatService({ model: process.env.SERVICE_MODEL ?? "emu-m", baseUrl, apiKey });
    const agent = createAgent({
      model,
      tools,
      systemPrompt: "You answer questions about blockchains with the tools you have. Quote the numbers they return.",
    });

    // name what the tools need: the network slug, the address, the token contract (the emulated model calls
    // a tool once per address it sees, so it also reads the token contract's own ETH balance)
    const question =
      `What are the ETH and USDC balances of "${address}" on base-mainnet? ` +
      `Use native_balance, and erc20_balance with token: "${token}".`;
    log(`> ${question}`);
    const { messages } = await agent.invoke({ messages: [new HumanMessage(question)] });

    const toolResults = messages
      .filter((m): m is ToolMessage => ToolMessage.isInstance(m))
      .map((m) => ({ name: m.name ?? "?", result: JSON.parse(m.text) as unknown }));
    for (const { name, result } of toolResults) log(`  ${name} -> ${JSON.stringify(result)}`);
    const answer = messages.at(-1)!.text;
    log(`< ${answer}`);
    if (onChain) log(`(the local node says: ${onChain.eth} ETH, ${onChain.usdc} USDC)`);
    return { question, answer, toolResults, onChain };
  } finally {
    await emulator?.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
