/**
 * ServiceEmbeddings tells the pacing layer its input's tokens. The emulator sends no token headers for embedding
 * models (none are published), so a scripted loopback server plays a deployment that does: its first answer leaves
 * 10 tokens of a 1000-token window that resets in a second; the next call, about 250 tokens, is held until then.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ServiceEmbeddings } from "../../src/embeddings/index.js";
import { startFixtureServer, type FixtureServer } from "../chat/fixture-server.js";

let fixture: FixtureServer;
beforeAll(async () => {
  fixture = await startFixtureServer();
});
afterAll(() => fixture?.close());

it("a call whose input does not fit the token window waits for its reset instead of drawing a 429", async () => {
  const arrivals: number[] = [];
  let resetAt = 0;
  fixture.script = (req, res) => {
    arrivals.push(Date.now());
    const first = arrivals.length === 1;
    if (first) resetAt = Date.now() + 1_000;
    const texts: string[] = typeof req.body.input === "string" ? [req.body.input] : req.body.input;
    res.writeHead(200, {
      "content-type": "application/json",
      "x-ratelimit-limit-requests": "500",
      "x-ratelimit-remaining-requests": "498",
      "x-ratelimit-reset-requests": String(Date.now() + 60_000),
      "x-ratelimit-limit-tokens": "1000",
      "x-ratelimit-remaining-tokens": first ? "10" : "740",
      "x-ratelimit-reset-tokens": String(first ? resetAt : Date.now() + 1_000),
    });
    res.end(
      JSON.stringify({
        object: "list",
        model: "emb",
        data: texts.map((_, index) => ({ object: "embedding", index, embedding: [0.6, 0.8] })),
        usage: { prompt_tokens: 1, total_tokens: 1 },
      }),
    );
  };
  const embeddings = new ServiceEmbeddings({ baseUrl: fixture.url, apiKey: "k", model: "emb" });
  await embeddings.embedQuery("first");
  await embeddings.embedQuery("word ".repeat(200));
  expect(arrivals).toHaveLength(2);
  expect(arrivals[1]!).toBeGreaterThanOrEqual(resetAt);
});
