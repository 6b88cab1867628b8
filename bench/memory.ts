/**
 * Memory of a long streamed answer: a 100k-token `[[emu:tokens=100000]]` answer streamed through
 * `ChatService.stream()` from the in-process emulator, each chunk dropped after it is read. Reports the live
 * heap growth over the second half of the stream (full GC before each sample) against the anchor: the same
 * stream read by a consumer that keeps every chunk. ratio = ours / anchor (goal: well under 1; constant memory).
 *
 * And memory per tenant: heap retained per 10k API keys once their clients are dropped, against the same
 * clients still alive (goal: near 0; the process-wide limiters and guards no longer keep every key).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { startEmulator } from "langchain-service-emulator";
import { ChatService } from "../src/chat/index.js";
import { ServiceClient } from "../src/client.js";
import { gc, heapUsed, settledHeap } from "./heap.js";
import { median, type BenchRow } from "./types.js";

const TOKENS = 100_000;

/** Streams once; returns ms, characters, and the heap growth from the 50% mark to the highest later sample. */
async function run(model: ChatService, keep: boolean): Promise<{ ms: number; chars: number; growth: number }> {
  const kept: unknown[] = [];
  const samples: number[] = [];
  let chars = 0;
  let nextTenth = 5;
  const t = performance.now();
  let sampledMs = 0;
  for await (const chunk of await model.stream(`[[emu:tokens=${TOKENS}]]`)) {
    if (keep) kept.push(chunk);
    chars += typeof chunk.content === "string" ? chunk.content.length : 0;
    // the filler averages ~6.2 characters a token; sample by characters so no tokenizer runs in the loop
    while (nextTenth <= 10 && chars >= (TOKENS * 6.2 * nextTenth) / 10 - 1) {
      const s = performance.now();
      samples.push(heapUsed());
      sampledMs += performance.now() - s;
      nextTenth++;
    }
  }
  if (samples.length < 2) samples.push(heapUsed());
  const ms = performance.now() - t - sampledMs;
  return { ms, chars, growth: Math.max(...samples.slice(1)) - samples[0]! };
}

const KEYS = 10_000;
const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Heap kept per 10k API keys once their clients are dropped: 10k clients (every tenth a ChatService) on
 * distinct keys, one request each to a tiny loopback server (rate-limit windows that reset within 2 s, as a
 * tenant's quiet minute would), then dropped. Measured after the windows reset, against the heap before.
 */
async function benchKeys(): Promise<BenchRow> {
  const completion = JSON.stringify({
    id: "c",
    object: "chat.completion",
    created: 1,
    model: "m",
    choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });
  const server = createServer(async (req, res) => {
    for await (const _ of req);
    res.writeHead(200, {
      "content-type": "application/json",
      "x-ratelimit-limit-requests": "1000",
      "x-ratelimit-remaining-requests": "999",
      "x-ratelimit-reset-requests": String(Math.ceil((Date.now() + 1000) / 1000)),
      "x-ratelimit-limit-tokens": "1000000",
      "x-ratelimit-remaining-tokens": "999000",
      "x-ratelimit-reset-tokens": "1",
    });
    res.end(req.url?.endsWith("/models") ? '{"object":"list","data":[]}' : completion);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
  const run = async (prefix: string, count: number, keep?: unknown[]) => {
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const i = next++;
        const apiKey = `${prefix}-${i}`;
        if (i % 10 === 0) {
          const m = new ChatService({ model: "m", apiKey, baseUrl });
          await m.invoke("hi");
          keep?.push(m);
        } else {
          const c = new ServiceClient({ apiKey, baseUrl });
          await c.listModels();
          keep?.push(c);
        }
      }
    };
    await Promise.all(Array.from({ length: 64 }, worker));
  };
  try {
    await run("warm", 500); // JIT, lazy modules, the connection pool
    await pause(3_500); // their windows reset; held state is swept (at most once a second)
    const base = await settledHeap();
    const live: unknown[] = [];
    const t = performance.now();
    await run("tenant", KEYS, live);
    const ms = performance.now() - t;
    const liveHeap = (await settledHeap()) - base;
    live.length = 0;
    await pause(3_500);
    const retained = (await settledHeap()) - base;
    const mb = (n: number) => `${(n / 1024 / 1024).toFixed(2)} MB`;
    return {
      name: `${KEYS / 1000}k API keys, one request each, clients dropped: heap retained`,
      median_ms: ms,
      ratio: retained / liveHeap,
      anchor: `the same clients still alive: ${mb(liveHeap)}`,
      note:
        `ours: ${mb(retained)} (${Math.round(retained / KEYS)} B/key) over the heap before any client; ` +
        `before the bounded registries: 11.45 MB (1201 B/key), measured the same way${gc ? "" : " (no GC available: raw heapUsed)"}`,
    };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
}

export async function benchMemory(): Promise<BenchRow[]> {
  const emu = await startEmulator({ apiKeys: [{ key: "bench-memory", usd: 10_000 }], rateLimits: { enabled: false } });
  const model = new ChatService({ model: "emu-xs", apiKey: "bench-memory", baseUrl: emu.url, abuseGuard: false });
  const ours: Awaited<ReturnType<typeof run>>[] = [];
  const keeping: Awaited<ReturnType<typeof run>>[] = [];
  try {
    await run(model, false); // warm-up
    for (let i = 0; i < 3; i++) {
      ours.push(await run(model, false));
      keeping.push(await run(model, true));
    }
  } finally {
    await emu.close();
  }
  const growth = median(ours.map((r) => r.growth));
  const anchorGrowth = median(keeping.map((r) => r.growth));
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(2)} MB`;
  const keys = await benchKeys();
  return [
    {
      name: `${TOKENS / 1000}k-token stream, chunks dropped: heap growth over the 2nd half`,
      median_ms: median(ours.map((r) => r.ms)),
      ratio: growth / anchorGrowth,
      anchor: `same stream, chunks kept: ${mb(anchorGrowth)}`,
      note: `ours: ${mb(growth)}; text ${mb(ours[0]!.chars)}${gc ? "" : " (no GC available: raw heapUsed)"}`,
    },
    keys,
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await benchMemory());
}
