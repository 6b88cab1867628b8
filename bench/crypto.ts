/**
 * Crypto tool call overhead against the emulator's JSON-RPC proxy over its local chain: median time per call
 * of the `native_balance` tool, of the generic `crypto_rpc` tool (`eth_getBalance`) and of our ethers adapter
 * (`createEthersProvider`, ethers through the fetch stack), each against the anchor: a plain ethers
 * `JsonRpcProvider` pointed at the same proxy URL with the API key header (static network, one request per
 * call, no cache) doing `getBalance`. ratio = ours / anchor; the difference is what the tool layer costs
 * (LangChain's tool machinery, schema validation, network check, the stack, formatting the answer for the
 * model). `ServiceClient.cryptoRpc` alone is measured too, to tell the stack's share from the tool's.
 */
import { FetchRequest, JsonRpcProvider, Network, Wallet } from "ethers";
import { startEmulator } from "langchain-service-emulator";
import { ServiceClient } from "../src/client.js";
import { CryptoRpcTool, NativeBalanceTool, createEthersProvider } from "../src/crypto-rpc/index.js";
import { median, type BenchRow } from "./types.js";

const KEY = "bench-crypto";
const NETWORK = "base-mainnet";
const WARMUP = 30;
const ROUNDS = 150;

export async function benchCrypto(): Promise<BenchRow[]> {
  // limits off: the bench measures call overhead, not pacing (the proxy shares the XS request bucket)
  const emu = await startEmulator({ chain: true, apiKeys: [{ key: KEY, usd: 10_000 }], rateLimits: { enabled: false } });
  const chain = emu.chain!;
  const funded = chain.accounts[1]!.address;
  const client = new ServiceClient({ baseUrl: emu.url, apiKey: KEY, abuseGuard: false });
  const nativeBalance = new NativeBalanceTool({ client });
  const cryptoRpc = new CryptoRpcTool({ client });
  const adapter = await createEthersProvider(client, NETWORK, { chainId: chain.chainId });

  // the anchor: what a developer would write by hand against the proxy
  const request = new FetchRequest(`${emu.url}/crypto/rpc/${NETWORK}`);
  request.setHeader("authorization", `Bearer ${KEY}`);
  const ethers = new JsonRpcProvider(request, Network.from(chain.chainId), { staticNetwork: true, batchMaxCount: 1, cacheTimeout: -1 });
  // straight to the chain, untimed: the first read of an address is slower inside ganache, whoever makes it
  const direct = new JsonRpcProvider(chain.rpcUrl, Network.from(chain.chainId), {
    staticNetwork: true,
    batchMaxCount: 1,
    cacheTimeout: -1,
  });

  // a fresh address each round: ethers caches identical calls for 250 ms (the adapter keeps that default), and
  // a cached answer would measure nothing; every call below is a full trip to the chain
  let address = funded;
  let expected = await ethers.getBalance(funded);
  const checks = {
    native_balance: async () => {
      const out = JSON.parse(String(await nativeBalance.invoke({ network: NETWORK, address }))) as { balance?: { wei?: string } };
      if (out.balance?.wei !== expected.toString()) throw new Error(`native_balance answered ${JSON.stringify(out)}`);
    },
    crypto_rpc: async () => {
      const out = JSON.parse(
        String(await cryptoRpc.invoke({ network: NETWORK, method: "eth_getBalance", params: [address, "latest"] })),
      ) as {
        result?: unknown;
      };
      if (out.result === undefined) throw new Error(`crypto_rpc answered ${JSON.stringify(out)}`);
    },
    client: async () => {
      const res = await client.cryptoRpc(NETWORK, { method: "eth_getBalance", params: [address, "latest"] });
      if (BigInt(res.result as string) !== expected) throw new Error("client balance differs");
    },
    adapter: async () => {
      if ((await adapter.getBalance(address)) !== expected) throw new Error("adapter balance differs");
    },
    ethers: async () => {
      if ((await ethers.getBalance(address)) !== expected) throw new Error("ethers balance differs");
    },
  };
  type Name = keyof typeof checks;
  const times: Record<Name, number[]> = { native_balance: [], crypto_rpc: [], client: [], adapter: [], ethers: [] };
  const names = Object.keys(checks) as Name[];
  try {
    // interleaved, after a warm-up, so JIT, the chain and CPU noise fall on every side alike
    for (const name of names) await checks[name](); // the funded account first: the checks compare real balances
    for (let round = 0; round < WARMUP + ROUNDS; round++) {
      address = Wallet.createRandom().address;
      expected = 0n;
      await direct.getBalance(address);
      // the order rotates, so no side always goes first
      for (let k = 0; k < names.length; k++) {
        const name = names[(round + k) % names.length]!;
        const t = performance.now();
        await checks[name]();
        if (round >= WARMUP) times[name].push(performance.now() - t);
      }
    }
  } finally {
    ethers.destroy();
    direct.destroy();
    adapter.destroy();
    await emu.close();
  }

  const anchorMs = median(times.ethers);
  const anchor = `ethers JsonRpcProvider on the same proxy URL: ${anchorMs.toFixed(3)} ms`;
  const row = (name: string, ms: number, note?: string): BenchRow => ({
    name,
    median_ms: ms,
    ratio: ms / anchorMs,
    anchor,
    ...(note ? { note } : {}),
  });
  return [
    row("native_balance tool call", median(times.native_balance), "schema + network check + stack + formatted answer"),
    row("crypto_rpc tool call (eth_getBalance)", median(times.crypto_rpc)),
    row("ServiceClient.cryptoRpc eth_getBalance (stack, no tool)", median(times.client)),
    row("ethers adapter getBalance (through the stack)", median(times.adapter)),
    row("ethers JsonRpcProvider getBalance (anchor)", anchorMs),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await benchCrypto());
}
