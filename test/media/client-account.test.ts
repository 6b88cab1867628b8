/**
 * Characters and billing through the emulator: `listCharacters` (every page, or one), `getCharacter`, the character
 * catalog `ChatService` checks `characterSlug` against (an unknown slug refused unsent once the whole list is
 * loaded, or once the service answered it 404), and `getUsage` (usage-history's cursor walk summed per model,
 * equal to the ledger; the published page-numbered route on a deployment without the new one). Wallet clients are
 * refused before any request on these Bearer-only routes.
 */
import { HumanMessage } from "@langchain/core/messages";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ChatService } from "../../src/chat/index.js";
import { AuthenticationError, CharacterNotFoundError, ConfigurationError, ValidationError } from "../../src/http/errors.js";
import { modelOfSku } from "../../src/account/billing.js";
import { EvmWallet } from "../../src/evm/index.js";
import { recordingClient } from "./helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({
    apiKeys: [
      { key: "chars-a", usd: 10, diem: 0 },
      { key: "chars-b", usd: 10, diem: 0 },
      { key: "chars-c", usd: 10, diem: 0 },
      { key: "billing", usd: 10, diem: 0.002 },
      { key: "inference", usd: 10, admin: false },
    ],
    rateLimits: { abuseMaxFailures: 10_000 },
  });
});
afterAll(async () => {
  await emu?.close();
});

/** A chat model whose requests are recorded (its own stack, the key's catalog shared by every client of the key). */
function chatWith(key: string) {
  const { client, count } = recordingClient(emu, { apiKey: key });
  return { chat: new ChatService({ model: "emu-s", serviceFetch: client.fetch }), count, client };
}

describe("listCharacters / getCharacter", () => {
  it("walks the list to a short page (or reads one page with limit), typed; filters become the published query", async () => {
    const { client, sent } = recordingClient(emu, { apiKey: "chars-a" });
    const all = await client.listCharacters();
    expect(all.map((c) => c.slug)).toEqual(["noir-detective", "socratic-tutor", "code-coach", "night-owl-poet", "ship-captain"]);
    expect(all.find((c) => c.slug === "ship-captain")!.description).toBeNull();
    expect(all[0]!.stats?.imports).toBe(8800);
    expect(sent[0]!.query).toBe("?limit=100&offset=0");
    const page = await client.listCharacters({ tags: ["Programming", "Poetry"], sortBy: "mostRecent", sortOrder: "asc", limit: 1 });
    expect(page.map((c) => c.slug)).toEqual(["code-coach"]);
    expect(new URLSearchParams(sent[1]!.query).get("tags")).toBe("Programming,Poetry");
    expect((await client.listCharacters({ isAdult: true })).map((c) => c.slug)).toEqual(["velvet-muse"]);
    expect((await client.getCharacter("code-coach")).name).toBe("Code Coach");
    const missing = await client.getCharacter("nobody").catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(CharacterNotFoundError);
    expect(missing).toMatchObject({ status: 404, slug: "nobody" });
  });

  it("refuses before any request: a wallet client (Bearer-only routes), limit over 100, a long search, a bad slug", async () => {
    const wallet = recordingClient(emu, { wallet: new EvmWallet(Wallet.createRandom().privateKey) });
    await expect(wallet.client.listCharacters()).rejects.toBeInstanceOf(ConfigurationError);
    await expect(wallet.client.getCharacter("code-coach")).rejects.toThrow(/needs an API key/);
    const { client, sent } = recordingClient(emu, { apiKey: "chars-a" });
    await expect(client.listCharacters({ limit: 101 })).rejects.toBeInstanceOf(ValidationError);
    await expect(client.listCharacters({ search: "x".repeat(201) })).rejects.toBeInstanceOf(ValidationError);
    await expect(client.getCharacter("../etc")).rejects.toBeInstanceOf(ValidationError);
    expect([...wallet.sent, ...sent]).toEqual([]);
  });
});

describe("ChatService's characterSlug against the loaded list", () => {
  it("before any list is loaded a slug is sent; the service's 404 is a CharacterNotFoundError, and the same slug is then refused unsent", async () => {
    const { chat, count } = chatWith("chars-b");
    const first = await chat.invoke([new HumanMessage("hi")], { serviceParameters: { characterSlug: "nobody" } }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(CharacterNotFoundError);
    expect((first as CharacterNotFoundError).status).toBe(404);
    expect(count("/chat/completions")).toBe(1);
    const again = await chat.invoke([new HumanMessage("hi")], { serviceParameters: { characterSlug: "nobody" } }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(CharacterNotFoundError);
    expect((again as CharacterNotFoundError).status).toBeUndefined();
    expect(count("/chat/completions")).toBe(1);
  });

  it("once the whole list is loaded (by any client of the key), a slug outside it is refused unsent, in the body or the model suffix; a listed one is applied", async () => {
    const { chat, count, client } = chatWith("chars-c");
    await client.listCharacters();
    for (const call of [
      () => chat.invoke([new HumanMessage("hi")], { serviceParameters: { characterSlug: "unknown-one" } }),
      () => new ChatService({ model: "emu-s:character_slug=unknown-one", serviceFetch: client.fetch }).invoke([new HumanMessage("hi")]),
    ]) {
      const err = await call().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CharacterNotFoundError);
      expect((err as Error).message).toMatch(/not in the loaded character list/);
    }
    expect(count("/chat/completions")).toBe(0);
    const plain = await chat.invoke([new HumanMessage("Who are you?")]);
    const persona = await chat.invoke([new HumanMessage("Who are you?")], { serviceParameters: { characterSlug: "code-coach" } });
    expect(persona.response_metadata.service_parameters).toMatchObject({ character_slug: "code-coach" });
    expect(persona.usage_metadata!.input_tokens).toBeGreaterThan(plain.usage_metadata!.input_tokens);
    // an adult character is not in the (non-adult) whole list: reading it makes it known
    await client.getCharacter("velvet-muse");
    expect((await chat.invoke([new HumanMessage("hi")], { serviceParameters: { characterSlug: "velvet-muse" } })).content).toBeTruthy();
  });
});

describe("getUsage", () => {
  it("walks usage-history by cursor and sums per model: equal to the ledger's charges (DIEM and USD apart), refunds subtracted", async () => {
    const { client, count } = recordingClient(emu, { apiKey: "billing" });
    for (let i = 0; i < 12; i++)
      await client.request("/chat/completions", {
        body: { model: i % 3 ? "emu-xs" : "emu-s", messages: [{ role: "user", content: `hello ${i}` }] },
      });
    await client.generateImage({ model: "emu-image", prompt: "a boat", width: 64, height: 64 });
    const report = await client.getUsage({ from: new Date(Date.now() - 3_600_000), pageSize: 10 });
    expect(report.source).toBe("usage-history");
    expect(report.pages).toBe(2);
    expect(count("/billing/usage-history")).toBe(2);
    const totals = emu.ledger.totals(emu.account("billing")!);
    expect(report.totalUsd + report.totalDiem).toBeCloseTo(totals.charged, 6);
    expect(report.totalDiem).toBeCloseTo(0.002, 6);
    const lines = Object.fromEntries(report.byModel.map((l) => [l.model, l]));
    expect(Object.keys(lines).sort()).toEqual(["emu-image", "emu-s", "emu-xs"]);
    expect(lines["emu-xs"]!.requests).toBe(8);
    expect(lines["emu-s"]!.requests).toBe(4);
    // DIEM is charged first: the image takes what the chats left of it, then USD
    expect(lines["emu-image"]!.requests).toBe(1);
    expect(lines["emu-image"]!.usd + lines["emu-image"]!.diem).toBeCloseTo(0.01, 6);
    expect(lines["emu-image"]!.diem).toBeGreaterThan(0);
    expect(report.byModel[0]!.usd + report.byModel[0]!.diem).toBeGreaterThanOrEqual(report.byModel[2]!.usd + report.byModel[2]!.diem);
    expect(report.entries.every((e) => e.requestId)).toBe(true);
  });

  it("a deployment without usage-history (seed: 404) is read at the published /billing/usage, page by page", async () => {
    const seed = await startEmulator({ mode: "seed", apiKeys: [{ key: "k", usd: 10, diem: 0 }] });
    try {
      const { client, count } = recordingClient(seed, { apiKey: "k" });
      for (let i = 0; i < 3; i++)
        await client.request("/chat/completions", { body: { model: "emu-xs", messages: [{ role: "user", content: "hi" }] } });
      const report = await client.getUsage({ pageSize: 10 });
      expect(report.source).toBe("usage");
      expect(count("/billing/usage-history")).toBe(1);
      expect(count("/billing/usage")).toBe(1);
      expect(report.byModel).toEqual([expect.objectContaining({ model: "emu-xs", requests: 3 })]);
      expect(report.totalUsd).toBeCloseTo(seed.ledger.totals(seed.account("k")!).charged, 6);
    } finally {
      await seed.close();
    }
  });

  it("an INFERENCE key's 401 is an AuthenticationError; a wallet client and a backwards range are refused before any request", async () => {
    await expect(recordingClient(emu, { apiKey: "inference" }).client.getUsage()).rejects.toBeInstanceOf(AuthenticationError);
    const wallet = recordingClient(emu, { wallet: new EvmWallet(Wallet.createRandom().privateKey) });
    await expect(wallet.client.getUsage()).rejects.toBeInstanceOf(ConfigurationError);
    const { client, sent } = recordingClient(emu, { apiKey: "billing" });
    await expect(client.getUsage({ from: "2026-02-01T00:00:00Z", to: "2026-01-01T00:00:00Z" })).rejects.toThrow(/later than/);
    await expect(client.getUsage({ from: "yesterday" })).rejects.toBeInstanceOf(ValidationError);
    await expect(client.getUsage({ pageSize: 5 })).rejects.toBeInstanceOf(ValidationError);
    expect([...sent, ...wallet.sent]).toEqual([]);
  });

  it("modelOfSku: known model ids first (longest), else the SKU without its unit part", () => {
    expect(modelOfSku("zai-org-glm-5-1-llm-output-mtoken")).toBe("zai-org-glm-5-1");
    expect(modelOfSku("grok-imagine-image-image-unit")).toBe("grok-imagine-image");
    expect(modelOfSku("emu-video-video-second", ["emu-video", "emu-video-i2v"])).toBe("emu-video");
    expect(modelOfSku("emu-video-i2v-video-second", ["emu-video", "emu-video-i2v"])).toBe("emu-video-i2v");
  });
});
