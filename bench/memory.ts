/**
 * Memory of a long streamed answer: a 100k-token `[[emu:tokens=100000]]` answer streamed through
 * `ChatService.stream()` from the in-process emulator, each chunk dropped after it is read. Reports the live
 * heap growth over the second half of the stream (full GC before each sample) against the anchor: the same
 * stream read by a consumer that keeps every chunk. ratio = ours / anchor (goal: well under 1; constant memory).
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { startEmulator } from "../src/emulator/index.js";
import { ChatService } from "../src/chat/index.js";
import { median, type BenchRow } from "./types.js";

const TOKENS = 100_000;

const gc: (() => void) | undefined = (() => {
  try {
    setFlagsFromString("--expose-gc");
    return runInNewContext("gc") as () => void;
  } catch {
    return undefined;
  }
})();

function heapUsed(): number {
  gc?.();
  return process.memoryUsage().heapUsed;
}

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
  return [
    {
      name: `${TOKENS / 1000}k-token stream, chunks dropped: heap growth over the 2nd half`,
      median_ms: median(ours.map((r) => r.ms)),
      ratio: growth / anchorGrowth,
      anchor: `same stream, chunks kept: ${mb(anchorGrowth)}`,
      note: `ours: ${mb(growth)}; text ${mb(ours[0]!.chars)}${gc ? "" : " (no GC available: raw heapUsed)"}`,
    },
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.table(await benchMemory());
}
