/**
 * The live service's in-flight limits, against the emulator in its live mode (the default):
 *
 * - a wallet's `model.batch()` of 20 prompts, which the live service lets run 5 at a time (the 6th in flight gets
 *   `429 X402_CONCURRENCY_LIMIT`). Each chat request takes 100 ms of model time (a latency fault), so 20 prompts
 *   need at least 4 rounds of 5: the goal is ≤ 4.5× one request, with 0 429s on the wire. The same batch with the
 *   client's queue off (`concurrency: false`) shows what it saves: the refusals it draws and re-sends.
 * - crypto RPC under the proxy's one-at-a-time rule: 10 parallel single calls of one key (coalesced by the client
 *   into one batch; with coalescing off, queued one after another), against one call, and the same 10 sent as one
 *   batch by hand (one request to the proxy). The upstream node takes 20 ms per answer.
 *
 * Medians of 5 rounds; ratios against one request.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Wallet } from "ethers";
import { ChatService } from "../src/chat/index.js";
import { ServiceClient } from "../src/client.js";
import { startEmulator } from "langchain-service-emulator";
import { EvmWallet } from "../src/evm/index.js";
import { median, type BenchRow } from "./types.js";

const ROUNDS = 5;
const MODEL_MS = 100;
const NODE_MS = 20;

/** a fetch that counts the 429s the wire saw */
function counting() {
  let refusals = 0;
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await globalThis.fetch(input, init);
    if (res.status === 429) refusals++;
    return res;
  };
  return { fetch, refusals: () => refusals };
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

export async function benchLive(): Promise<BenchRow[]> {
  const node = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id: number } | { id: number }[];
      const answer = (b: { id: number }) => ({ jsonrpc: "2.0", id: b.id, result: "0x2105" });
      setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(Array.isArray(body) ? body.map(answer) : answer(body)));
      }, NODE_MS);
    });
  });
  await new Promise<void>((resolve) => node.listen(0, "127.0.0.1", resolve));
  const nodeUrl = `http://127.0.0.1:${(node.address() as AddressInfo).port}`;
  const emu = await startEmulator({
    apiKeys: [{ key: "bench-live", usd: 10_000 }],
    walletStartingUsd: 10_000,
    upstreams: { "base-mainnet": nodeUrl },
    networks: ["base-mainnet"],
    faults: { latencyMs: MODEL_MS, paths: ["/chat/completions"] },
    // the bench measures the in-flight limits, not the rate limits
    rateLimits: { tiers: { XS: { requests: 1_000_000, tokens: 1_000_000_000 } }, cryptoRpc: { requests: 1_000_000 } },
  });
  try {
    const prompts = Array.from({ length: 20 }, (_, i) => `prompt ${i}`);
    const queued = counting();
    const wallet = new EvmWallet(Wallet.createRandom().privateKey);
    const model = new ChatService({ model: "emu-xs", baseUrl: emu.url, wallet, fetch: queued.fetch });
    const unqueued = counting();
    const bare = new ChatService({
      model: "emu-xs",
      baseUrl: emu.url,
      wallet: new EvmWallet(Wallet.createRandom().privateKey),
      fetch: unqueued.fetch,
      concurrency: false,
    });
    await model.invoke("warm-up");
    await bare.invoke("warm-up");

    const one: number[] = [];
    const batch: number[] = [];
    const batchBare: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      one.push(await time(() => model.invoke("one")));
      batch.push(await time(() => model.batch(prompts)));
      batchBare.push(await time(() => bare.batch(prompts)));
    }

    const client = new ServiceClient({ apiKey: "bench-live", baseUrl: emu.url });
    const calls = Array.from({ length: 10 }, (_, i) => ({ method: "eth_chainId", id: i + 1 }));
    const rpcWire = counting();
    const rpcClient = new ServiceClient({ apiKey: "bench-live", baseUrl: emu.url, fetch: rpcWire.fetch });
    await rpcClient.cryptoRpc("base-mainnet", calls[0]!);
    const queuedWire = counting();
    const queuedClient = new ServiceClient({
      apiKey: "bench-live",
      baseUrl: emu.url,
      fetch: queuedWire.fetch,
      concurrency: { cryptoRpcBatchMaxCount: 1 },
    });
    const rpcOne: number[] = [];
    const rpcParallel: number[] = [];
    const rpcQueued: number[] = [];
    const rpcBatch: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      rpcOne.push(await time(() => rpcClient.cryptoRpc("base-mainnet", calls[0]!)));
      rpcParallel.push(await time(() => Promise.all(calls.map((c) => rpcClient.cryptoRpc("base-mainnet", c)))));
      rpcQueued.push(await time(() => Promise.all(calls.map((c) => queuedClient.cryptoRpc("base-mainnet", c)))));
      rpcBatch.push(await time(() => client.cryptoRpc("base-mainnet", calls)));
    }

    const oneMs = median(one);
    const rpcOneMs = median(rpcOne);
    return [
      {
        name: "wallet invoke (one request)",
        median_ms: oneMs,
        ratio: 1,
        anchor: "itself",
        note: `${MODEL_MS} ms of model time per request`,
      },
      {
        name: "wallet batch() of 20, 5 in flight",
        median_ms: median(batch),
        ratio: median(batch) / oneMs,
        anchor: "wallet invoke",
        note: `goal ≤ 4.5×; 429s on the wire: ${queued.refusals()} in ${ROUNDS} rounds`,
      },
      {
        name: "wallet batch() of 20, queue off",
        median_ms: median(batchBare),
        ratio: median(batchBare) / oneMs,
        anchor: "wallet invoke",
        note: `concurrency: false; 429s drawn (then re-sent): ${unqueued.refusals()} in ${ROUNDS} rounds`,
      },
      { name: "crypto RPC, one call", median_ms: rpcOneMs, ratio: 1, anchor: "itself", note: `the node answers in ${NODE_MS} ms` },
      {
        name: "crypto RPC, 10 parallel calls (coalesced)",
        median_ms: median(rpcParallel),
        ratio: median(rpcParallel) / rpcOneMs,
        anchor: "crypto RPC, one call",
        note: `one batch on the wire (the stack coalesces them); 429s on the wire: ${rpcWire.refusals()}`,
      },
      {
        name: "crypto RPC, 10 parallel calls, coalescing off (queued)",
        median_ms: median(rpcQueued),
        ratio: median(rpcQueued) / rpcOneMs,
        anchor: "crypto RPC, one call",
        note: `cryptoRpcBatchMaxCount: 1; one at a time, as the proxy serves them; 429s on the wire: ${queuedWire.refusals()}`,
      },
      {
        name: "crypto RPC, the 10 as one batch",
        median_ms: median(rpcBatch),
        ratio: median(rpcBatch) / rpcOneMs,
        anchor: "crypto RPC, one call",
        note: "a batch is one request to the proxy",
      },
    ];
  } finally {
    await emu.close();
    await new Promise<void>((resolve) => node.close(() => resolve()));
  }
}
