/** Shared setup for the crypto RPC tests: an emulator with the local chain, clients that count requests, a Solana node. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Contract, JsonRpcProvider, Network, Wallet } from "ethers";
import { USDC_ABI } from "../../packages/langchain-service-emulator/src/chain/index.js";
import type { Emulator } from "langchain-service-emulator";
import type { LocalChain } from "../../packages/langchain-service-emulator/src/types.js";
import { ServiceClient } from "../../src/client.js";
import { createSolanaLedger, type SolanaLedger } from "../../packages/langchain-service-emulator/src/x402/solana.js";

export interface CountingClient {
  client: ServiceClient;
  /** requests by path, e.g. counts["/crypto/rpc/networks"] */
  counts: Record<string, number>;
  total(): number;
}

/** A real client over loopback whose underlying fetch counts what reaches the wire. */
export function countingClient(emu: Emulator, apiKey: string, extra: Record<string, unknown> = {}): CountingClient {
  const counts: Record<string, number> = {};
  const client = new ServiceClient({
    baseUrl: emu.url,
    apiKey,
    retry: { maxRetries: 1, baseDelayMs: 5, maxDelayMs: 10 },
    fetch: (input, init) => {
      const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
      const path = url.pathname.replace(/^\/api\/v1/, "");
      counts[path] = (counts[path] ?? 0) + 1;
      return globalThis.fetch(input, init);
    },
    ...extra,
  });
  return { client, counts, total: () => Object.values(counts).reduce((a, b) => a + b, 0) };
}

export function chainProvider(chain: LocalChain): JsonRpcProvider {
  return new JsonRpcProvider(chain.rpcUrl, Network.from(chain.chainId), { staticNetwork: true, batchMaxCount: 1, cacheTimeout: -1 });
}

/** A real USDC transfer on the local chain; returns the receipt. */
export async function transferUsdc(chain: LocalChain, fromIndex: number, to: string, amount: bigint) {
  const provider = chainProvider(chain);
  try {
    const wallet = new Wallet(chain.accounts[fromIndex]!.privateKey, provider);
    const usdc = new Contract(chain.usdc.address, USDC_ABI, wallet);
    const tx = await usdc.getFunction("transfer")(to, amount);
    const receipt = await tx.wait();
    if (receipt?.status !== 1) throw new Error("transfer failed");
    return receipt;
  } finally {
    provider.destroy();
  }
}

/**
 * A Solana JSON-RPC node on loopback backed by LiteSVM (the real SVM in-process; no npm package runs a Solana
 * validator): `balances` seeds lamports, and every answer reads LiteSVM's state. In front of it sits one quirk
 * some real nodes have, for the client's error handling: a batch holding `getHealth` is answered with a single
 * error object instead of an array.
 */
export async function startSolanaStandIn(
  balances: Record<string, number>,
): Promise<{ url: string; ledger: SolanaLedger; close(): Promise<void> }> {
  const ledger = await createSolanaLedger();
  for (const [address, lamports] of Object.entries(balances)) ledger.setLamports(address, BigInt(lamports));
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const reply = (answer: unknown) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(answer));
      };
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        return reply({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
      }
      if (Array.isArray(body) && body.some((r: { method?: string }) => r?.method === "getHealth")) {
        return reply({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "batch requests are not supported" } });
      }
      void ledger.rpc(body).then(reply);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, ledger, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
