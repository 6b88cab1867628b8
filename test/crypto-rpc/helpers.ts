/** Shared setup for the crypto RPC tests: an emulator with the local chain, clients that count requests. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Contract, JsonRpcProvider, Network, Wallet } from "ethers";
import { USDC_ABI } from "../../src/emulator/chain/index.js";
import type { Emulator } from "../../src/emulator/index.js";
import type { LocalChain } from "../../src/emulator/types.js";
import { ServiceClient } from "../../src/http/client.js";

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
    if (!receipt || receipt.status !== 1) throw new Error("transfer failed");
    return receipt;
  } finally {
    provider.destroy();
  }
}

/**
 * A minimal Solana-shaped JSON-RPC node on loopback (no npm package runs a Solana validator; LiteSVM is
 * an optional dependency not installed here). It keeps real state: lamport balances and a slot that moves.
 */
export async function startSolanaStandIn(balances: Record<string, number>): Promise<{ url: string; close(): Promise<void> }> {
  let slot = 1000;
  const server: Server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => (raw += c.toString("utf8")));
    req.on("end", () => {
      const answer = (r: { id: unknown; method: string; params?: unknown[] }) => {
        slot++;
        switch (r.method) {
          case "getBalance":
            return { jsonrpc: "2.0", id: r.id, result: { context: { slot }, value: balances[String(r.params?.[0])] ?? 0 } };
          case "getSlot":
            return { jsonrpc: "2.0", id: r.id, result: slot };
          case "getBlockHeight":
            return { jsonrpc: "2.0", id: r.id, result: slot - 10 };
          case "getVersion":
            return { jsonrpc: "2.0", id: r.id, result: { "solana-core": "2.1.0", "feature-set": 1 } };
          default:
            return { jsonrpc: "2.0", id: r.id, error: { code: -32601, message: "Method not found" } };
        }
      };
      const body = JSON.parse(raw);
      res.writeHead(200, { "content-type": "application/json" });
      if (Array.isArray(body) && body.some((r: { method: string }) => r.method === "getHealth")) {
        // some nodes answer a whole batch with one error object
        res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "batch requests are not supported" } }));
        return;
      }
      res.end(JSON.stringify(Array.isArray(body) ? body.map(answer) : answer(body)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
