/**
 * A 100k-token streamed answer is consumed in constant memory: `ChatService.stream()` against the emulator
 * (in this process, over loopback), each chunk read and dropped. The heap is measured at tenths of the stream;
 * the growth over its second half stays small, does not grow with the answer's size (a 20k-token stream grows
 * about as much), and is below what a consumer that keeps the chunks shows under the same measure.
 *
 * Heap numbers: a full GC before each sample when one can be had (V8's `--expose-gc`, switched on at run time:
 * vitest starts its workers without it); otherwise raw `heapUsed` samples, with the bound loose enough for the
 * young generation's churn.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gc, heapUsed } from "../../bench/heap.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { countTokens } from "../../packages/langchain-service-emulator/src/models/tokenizer.js";
import { ChatService } from "../../src/chat/index.js";

const KEY = "memory-key";
const MB = 1024 * 1024;
let emu: Emulator;

beforeAll(async () => {
  // a big account, and token limits out of the way: 100k tokens is a fifth of the XS tier's minute
  emu = await startEmulator({ apiKeys: [{ key: KEY, usd: 10_000 }], rateLimits: { enabled: false } });
});
afterAll(async () => {
  await emu?.close();
});

interface StreamStats {
  tokens: number;
  chars: number;
  chunks: number;
  outputTokens?: number;
  /** heap at 50%, 60%, ... 100% of the tokens (a full GC each: only the second half is measured) */
  samples: number[];
}

/**
 * Streams `[[emu:tokens=n]]` and keeps nothing of the chunks but counters; given `kept`, keeps a serialized copy of
 * each chunk there. A copy, not the chunk: a chunk's text is also held by core's running concatenation of the answer
 * (V8 joins strings by reference), so keeping the chunk objects adds only their shells, a size that GC noise covers.
 */
async function consume(model: ChatService, n: number, kept?: string[]): Promise<StreamStats> {
  const stats: StreamStats = { tokens: 0, chars: 0, chunks: 0, samples: [] };
  let nextTenth = 5;
  for await (const chunk of await model.stream(`[[emu:tokens=${n}]]`)) {
    stats.chunks++;
    kept?.push(JSON.stringify(chunk));
    const text = typeof chunk.content === "string" ? chunk.content : "";
    // chunks carry whole tokens, so counting per chunk counts the answer
    stats.tokens += countTokens(text);
    stats.chars += text.length;
    if (chunk.usage_metadata) stats.outputTokens = chunk.usage_metadata.output_tokens;
    while (nextTenth <= 10 && stats.tokens >= (n * nextTenth) / 10) {
      stats.samples.push(heapUsed());
      nextTenth++;
    }
  }
  return stats;
}

/** Heap growth over the second half of a stream (from the 50% sample to the highest later one). */
function secondHalfGrowth(s: StreamStats): number {
  return Math.max(...s.samples.slice(1)) - s.samples[0]!;
}

describe("a 100k-token streamed answer", () => {
  it("is consumed without keeping its chunks: under 2 MB of growth, not 5x for 5x the answer", async () => {
    const model = new ChatService({ model: "emu-xs", apiKey: KEY, baseUrl: emu.url, abuseGuard: false });
    await consume(model, 5_000); // warm-up: JIT, connection pool, lazily loaded modules

    const small = await consume(model, 20_000);
    const big = await consume(model, 100_000);
    // control: a consumer that keeps a copy of every chunk, measured the same way
    const kept: string[] = [];
    const keeping = await consume(model, 100_000, kept);

    // the whole answer went through: exactly 100k tokens, ~0.5 MB of text, in many chunks
    expect(big.tokens).toBe(100_000);
    expect(big.outputTokens).toBe(100_000);
    expect(small.tokens).toBe(20_000);
    expect(big.chars).toBeGreaterThan(400_000);
    expect(big.chunks).toBeGreaterThan(500);
    expect(big.samples).toHaveLength(6);

    expect(kept.length).toBe(keeping.chunks);

    const bigGrowth = secondHalfGrowth(big);
    const smallGrowth = secondHalfGrowth(small);
    const keepingGrowth = secondHalfGrowth(keeping);
    if (gc) {
      // the measure sees retention: keeping copies of the chunks of the second half costs at least their text
      expect(keepingGrowth).toBeGreaterThan(big.chars / 2);
      // after a full GC the live heap barely moves while 50k tokens (~310 KB of text) stream past. LangChain's
      // run concatenates the answer into its result while it streams (handed to handleLLMEnd), so the text is held
      // once until the end, by core, not per chunk; that is about what a consumer keeping every chunk holds now that
      // a text chunk is light, so the two are not compared (they differ by GC noise)
      expect(bigGrowth).toBeLessThan(2 * MB);
      // 5× the answer does not make 5× the growth: nothing proportional to the answer is kept
      expect(bigGrowth).toBeLessThan(Math.max(smallGrowth, 0) + 1 * MB);
    } else {
      // raw samples include young-generation garbage between scavenges
      expect(bigGrowth).toBeLessThan(30 * MB);
      expect(bigGrowth).toBeLessThan(Math.max(smallGrowth, 0) + 20 * MB);
    }
  });
});
