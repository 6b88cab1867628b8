/**
 * One way of streaming 1000 chunks from the bench's fixed-answer loopback server, many times, for a CPU profile:
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/stream-profile.ts service|ours|sdk [streams]
 *
 * Prints the mean time per stream; the profile says where it goes.
 */
import OpenAI from "openai";
import { HumanMessage } from "@langchain/core/messages";
import { ChatService } from "../src/chat/index.js";
import { fixedServer } from "./chat.js";

const way = process.argv[2] ?? "service";
const n = Number(process.argv[3] ?? 300);
const { url, server } = await fixedServer();
const model = new ChatService({ model: "bench", apiKey: "k", baseUrl: url });
const sdk = new OpenAI({ apiKey: "k", baseURL: url, maxRetries: 0 });
const once = async (w: string): Promise<number> => {
  let count = 0;
  const it: AsyncIterable<unknown> =
    w === "sdk"
      ? await sdk.chat.completions.create({ model: "bench", messages: [{ role: "user", content: "hello" }], stream: true })
      : w === "ours" // the model's own generator alone, without core's run around it
        ? model._streamResponseChunks([new HumanMessage("hello")], {} as never)
        : await model.stream("hello");
  for await (const _ of it) count++;
  return count;
};
// `all`: the three ways interleaved, 20 streams each per round (load from other processes hits them alike)
const ways = way === "all" ? ["sdk", "ours", "service"] : [way];
const rounds = way === "all" ? Math.max(1, Math.round(n / 20)) : 1;
const per = way === "all" ? 20 : n;
for (const w of ways) for (let i = 0; i < 30; i++) await once(w); // warm-up
const samples: Record<string, number[]> = Object.fromEntries(ways.map((w) => [w, []]));
let chunks = 0;
for (let r = 0; r < rounds; r++) {
  for (let j = 0; j < ways.length; j++) {
    const w = ways[(j + r) % ways.length]!;
    const t0 = performance.now();
    for (let i = 0; i < per; i++) chunks = await once(w);
    samples[w]!.push((performance.now() - t0) / per);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const w of ways)
  console.log(`${w}: ${median(samples[w]!).toFixed(2)} ms per stream (median of ${rounds}), ${chunks} chunks in the last`);
server.closeAllConnections();
server.close();
