/**
 * Text deltas take core's string form of `AIMessageChunk` (the fields-object form costs ~10-30 us a chunk on
 * Node 20): the chunk the caller gets still carries the answer's id (serialized too), the provider, and one
 * chunk per delta.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AIMessageChunk } from "@langchain/core/messages";
import { ChatService } from "../../src/chat/index.js";
import { startFixtureServer, type FixtureServer } from "./fixture-server.js";

const EVENTS = 200;
const base = { id: "chatcmpl-cost", object: "chat.completion.chunk", created: 1, model: "m" };
let sse = `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] })}\n\n`;
for (let i = 0; i < EVENTS; i++)
  sse += `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: `w${i} ` }, finish_reason: null }] })}\n\n`;
sse += `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`;
const body = Buffer.from(sse);

let server: FixtureServer;
beforeAll(async () => {
  server = await startFixtureServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    const step = Math.ceil(body.length / 16);
    for (let i = 0; i < body.length; i += step) res.write(body.subarray(i, i + step));
    res.end();
  });
});
afterAll(() => server.close());

describe("a text delta's chunk", () => {
  it("a text delta's chunk keeps the id, the provider and a serialized id", async () => {
    const model = new ChatService({ model: "m", apiKey: "k", baseUrl: server.url, maxRetries: 0 });
    const chunks: AIMessageChunk[] = [];
    for await (const chunk of await model.stream("hi")) chunks.push(chunk);
    const text = chunks[4]!;
    expect(text.content).toBe("w4 ");
    expect(text.id).toBe("chatcmpl-cost");
    expect(text.response_metadata.model_provider).toBe(model.brand);
    expect((text.toJSON() as { kwargs: { id?: string } }).kwargs.id).toBe("chatcmpl-cost");
    expect(chunks.map((c) => c.content).join("")).toBe(Array.from({ length: EVENTS }, (_, i) => `w${i} `).join(""));
  });
});
