/**
 * One way of streaming 1000 chunks from the bench's fixed-answer loopback server, many times, for a CPU profile:
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/stream-profile.ts service|sdk [streams]
 *
 * Prints the mean time per stream; the profile says where it goes.
 */
import OpenAI from "openai";
import { ChatService } from "../src/chat/index.js";
import { fixedServer } from "./chat.js";

const way = process.argv[2] ?? "service";
const n = Number(process.argv[3] ?? 300);
const { url, server } = await fixedServer();
const model = new ChatService({ model: "bench", apiKey: "k", baseUrl: url });
const sdk = new OpenAI({ apiKey: "k", baseURL: url, maxRetries: 0 });
const once = async (): Promise<number> => {
  let count = 0;
  const it: AsyncIterable<unknown> =
    way === "sdk" ? await sdk.chat.completions.create({ model: "bench", messages: [{ role: "user", content: "hello" }], stream: true }) : await model.stream("hello");
  for await (const _ of it) count++;
  return count;
};
for (let i = 0; i < 30; i++) await once(); // warm-up
const t0 = performance.now();
let chunks = 0;
for (let i = 0; i < n; i++) chunks = await once();
console.log(`${way}: ${((performance.now() - t0) / n).toFixed(2)} ms per stream, ${chunks} chunks`);
server.closeAllConnections();
server.close();
