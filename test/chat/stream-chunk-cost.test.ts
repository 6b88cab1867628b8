/**
 * The model's own stream (`_streamResponseChunks`, without core's run around it) against a floor over the same
 * loopback: a bare fetch, the SSE split by hand, `JSON.parse` and core's cheapest chunk (`new AIMessageChunk(text)`)
 * per event. Text chunks built through core's fields-object form cost ~10-30 us more each on Node 20 (measured here:
 * 2.96x, 3.58x, 3.42x the floor before, 1.33x-1.99x after); medians of 9 interleaved rounds of 3 streams.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AIMessageChunk, HumanMessage } from "@langchain/core/messages";
import { ChatService } from "../../src/chat/index.js";
import { startFixtureServer, type FixtureServer } from "./fixture-server.js";

const EVENTS = 1000;
const base = { id: "chatcmpl-cost", object: "chat.completion.chunk", created: 1, model: "m" };
let sse = "";
for (let i = 0; i < EVENTS; i++) sse += `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: `w${i} ` }, finish_reason: null }] })}\n\n`;
sse += `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`;
const body = Buffer.from(sse);
let server: FixtureServer;
beforeAll(async () => {
  server = await startFixtureServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(body);
  });
});
afterAll(() => server.close());

describe("the stream's own cost per chunk", () => {
  it("reads 1000 text deltas, one chunk each, in at most 2.5x a bare read that builds the cheapest chunk", async () => {
    const model = new ChatService({ model: "m", apiKey: "k", baseUrl: server.url, maxRetries: 0 });
    const ours = async () => { let n = 0; for await (const _ of model._streamResponseChunks([new HumanMessage("hi")], {} as never)) n++; return n; };
    const floor = async () => { const r = await fetch(server.url + "/chat/completions", { method: "POST", body: "{}" }); const t = await r.text(); let n = 0; for (const ev of t.split("\n\n")) { const d = ev.slice(6); if (!d || d === "[DONE]") continue; const c = JSON.parse(d).choices[0]?.delta.content ?? ""; new AIMessageChunk(c); n++; } return n; };
    for (let i = 0; i < 5; i++) { await ours(); await floor(); }
    const t: Record<string, number[]> = { ours: [], floor: [] };
    for (let r = 0; r < 9; r++) for (const w of ["ours", "floor"]) { const t0 = performance.now(); for (let i = 0; i < 3; i++) await (w === "ours" ? ours() : floor()); t[w]!.push(performance.now() - t0); }
    const med = (x: number[]) => [...x].sort((a, b) => a - b)[4]!;
    expect(await ours()).toBe(EVENTS + 1); // each delta one chunk, and the closing one
    expect(med(t.ours!) / med(t.floor!)).toBeLessThan(2.5);
  }, 60000);
});
