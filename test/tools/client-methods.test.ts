/**
 * ServiceClient's doors to the other inference endpoints, against the emulator: the same stack (key, pacing,
 * typed errors) as every face, the OpenAI-compatible `/images/generations` included, and bad input refused unsent.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ValidationError } from "../../src/http/errors.js";
import { countingClient, decodePng } from "./helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [{ key: "rich", usd: 50, diem: 0 }] });
});
afterAll(async () => {
  await emu?.close();
});

describe("ServiceClient: search, scrape, images, speech", () => {
  it("each method reaches its endpoint once and returns what a caller reads", async () => {
    const { client, counts } = countingClient(emu, { apiKey: "rich" });
    const search = await client.webSearch({ query: "USDC decimals", limit: 3 });
    expect(search.results.length).toBeGreaterThan(0);
    const page = await client.webScrape(search.results[0]!.url);
    expect(page.content.length).toBeGreaterThan(0);
    const simple = await client.simpleGenerateImage({ prompt: "a red circle" });
    expect(decodePng(simple.images[0]!.bytes).width).toBeGreaterThan(0);
    const own = await client.generateImage({ model: "emu-image", prompt: "a red circle", format: "png" });
    expect(own.images[0]!.mimeType).toBe("image/png");
    const speech = await client.createSpeech({ input: "hello there" });
    expect(speech.durationSeconds).toBeGreaterThan(0);
    expect(counts).toMatchObject({
      "/augment/search": 1,
      "/augment/scrape": 1,
      "/images/generations": 1,
      "/image/generate": 1,
      "/audio/speech": 1,
    });
  });

  it("bad input is a ValidationError before any request", async () => {
    const { client, total } = countingClient(emu, { apiKey: "rich" });
    await expect(client.webScrape("http://127.0.0.1:8080/admin")).rejects.toBeInstanceOf(ValidationError);
    await expect(client.simpleGenerateImage({ prompt: "" })).rejects.toBeInstanceOf(ValidationError);
    await expect(client.createSpeech({ input: "" })).rejects.toBeInstanceOf(ValidationError);
    expect(total()).toBe(0);
  });
});
