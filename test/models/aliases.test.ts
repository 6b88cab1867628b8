/**
 * Traits (`fastest`, `default`) and compatibility names (`gpt-4o`) as `model`, against the emulator over loopback:
 * `GET /models/traits` and `GET /models/compatibility_mapping` in the published shapes, a chat model named by a
 * trait or a mapped name served as the model it resolves to (the request keeps the name as written), with that
 * model's profile and prices, and an unknown name still a ModelNotFoundError.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ChatService, ServiceClient, ServiceEmbeddings, costOf } from "../../src/index.js";
import { BadRequestError, BudgetExceededError, ModelNotFoundError } from "../../src/http/errors.js";
import { SpendBudget } from "../../src/spend/budget.js";
import { createServiceContext } from "../../src/http/context.js";

let emu: Emulator;
const KEYS = ["alias-1", "alias-2", "alias-3"];
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: KEYS.map((key) => ({ key, usd: 50 })), rateLimits: { enabled: false } });
});
afterAll(async () => {
  await emu?.close();
});
// each test its own context: no /models list carried over from another
let context = createServiceContext();
beforeEach(() => {
  context = createServiceContext();
});

/** the `model` of every chat request body that reached the wire */
function wire() {
  const models: string[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    if (String(input).endsWith("/chat/completions") && typeof init?.body === "string") models.push(JSON.parse(init.body).model);
    return globalThis.fetch(input, init);
  };
  return { models, fetch };
}

describe("GET /models/traits and /models/compatibility_mapping", () => {
  it("answer { object, type, data: name -> model id } per list type, typed by the client", async () => {
    const client = new ServiceClient({ context, baseUrl: emu.url, apiKey: KEYS[0] });
    const text = await client.listModelTraits("text");
    expect(text).toMatchObject({ object: "list", type: "text" });
    expect(text.data).toMatchObject({ default: "emu-s", fastest: "emu-xs", most_intelligent: "emu-l", default_reasoning: "emu-reasoner" });
    expect((await client.listModelTraits()).data).toEqual(text.data); // text by default
    expect((await client.listModelTraits("image")).data).toEqual({ default: "emu-image", highest_quality: "emu-image-hd" });
    expect((await client.listModelTraits("embedding")).data).toEqual({ default: "text-embedding-bge-m3" });

    const mapping = await client.getCompatibilityMapping("text");
    expect(mapping).toMatchObject({ object: "list", type: "text" });
    expect(mapping.data["gpt-4o"]).toBe("emu-m");
    const listed = new Set((await client.listModels({ type: "text" })).map((m) => m.id));
    for (const id of Object.values(mapping.data)) expect(listed.has(id)).toBe(true);
    expect((await client.getCompatibilityMapping("embedding")).data).toEqual({ "text-embedding-ada-002": "text-embedding-bge-m3" });
    await expect(client.listModelTraits("nonsense")).rejects.toBeInstanceOf(BadRequestError);
  });

  it("the shared records resolve a trait from /models and a mapped name once the mapping is read", async () => {
    const records = new ServiceClient({ context, baseUrl: emu.url }).models();
    expect(await records.resolve("fastest")).toBe(records.get("emu-xs"));
    expect(records.get("default")?.id).toBe("emu-s");
    expect(records.get("gpt-4o")).toBeUndefined(); // the mapping is not read yet
    expect((await records.resolve("gpt-4o"))?.id).toBe("emu-m");
    expect(records.get("gpt-4o")?.id).toBe("emu-m");
    expect(records.pricing("gpt-4o")).toEqual(records.pricing("emu-m"));
    expect(await records.resolve("no-such-model")).toBeUndefined();
  });
});

describe("a trait or a compatibility name as model", () => {
  it("model: 'fastest' answers as the model it resolves to, with that model's profile; the request keeps 'fastest'", async () => {
    const { models, fetch } = wire();
    const m = new ChatService({ context, baseUrl: emu.url, apiKey: KEYS[0], model: "fastest", fetch });
    const answer = await m.invoke("hello");
    expect(answer.content).toBeTruthy();
    expect(answer.response_metadata.model_name).toBe("emu-xs");
    expect(models).toEqual(["fastest"]);
    const resolved = new ChatService({ context, baseUrl: emu.url, apiKey: KEYS[0], model: "emu-xs" });
    const profile = await m.loadProfile();
    expect(profile.maxInputTokens).toBeGreaterThan(0);
    expect(profile).toEqual(await resolved.loadProfile());
    expect(await new ChatService({ context, baseUrl: emu.url, apiKey: KEYS[0], model: "default" }).loadProfile()).toEqual(
      await new ChatService({ context, baseUrl: emu.url, apiKey: KEYS[0], model: "emu-s" }).loadProfile(),
    );
  });

  it("model: 'gpt-4o' (a mapped name) answers as the mapped model, with its profile", async () => {
    const { models, fetch } = wire();
    const m = new ChatService({ context, baseUrl: emu.url, apiKey: KEYS[0], model: "gpt-4o", fetch });
    const answer = await m.invoke("hello");
    expect(answer.response_metadata.model_name).toBe("emu-m");
    expect(models).toEqual(["gpt-4o"]);
    const profile = await m.loadProfile();
    expect(profile.maxInputTokens).toBeGreaterThan(0);
    expect(profile).toEqual(await new ChatService({ context, baseUrl: emu.url, apiKey: KEYS[0], model: "emu-m" }).loadProfile());
  });

  it("a spend budget reserves the resolved model's price for a trait or a mapped name", async () => {
    const worstCase = async (model: string) => {
      const tiny = new SpendBudget({ maxUsd: 1e-9, name: `tiny-${model}` });
      const err = await new ChatService({ context, baseUrl: emu.url, apiKey: KEYS[1], model, budget: tiny, maxTokens: 16 })
        .invoke("hi")
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BudgetExceededError);
      return (err as BudgetExceededError).estimateUsd;
    };
    // the same prices: equal but for the input the name's own characters add to the estimate
    const near = (a: number, b: number) => Number.isFinite(a) && a > 0 && Math.abs(a / b - 1) < 0.05;
    const fastest = await worstCase("fastest");
    expect(near(fastest, await worstCase("emu-xs"))).toBe(true);
    expect(near(await worstCase("gpt-4o"), await worstCase("emu-m"))).toBe(true);
    expect(near(fastest, await worstCase("emu-m"))).toBe(false);

    const budget = new SpendBudget({ maxUsd: 1, name: "trait" });
    const answer = await new ChatService({ context, baseUrl: emu.url, apiKey: KEYS[1], model: "fastest", budget, maxTokens: 16 }).invoke(
      "hi",
    );
    const cost = costOf(answer)!;
    expect(budget.spentUsd).toBeGreaterThan(0);
    expect(budget.spentUsd).toBeCloseTo(cost.usd + cost.diem, 9);
    expect(budget.reservedUsd).toBe(0);
  });

  it("embeddings accept a mapped name and answer the mapped model", async () => {
    const e = new ServiceEmbeddings({ context, baseUrl: emu.url, apiKey: KEYS[2], model: "text-embedding-ada-002" });
    const direct = new ServiceEmbeddings({ context, baseUrl: emu.url, apiKey: KEYS[2], model: "text-embedding-bge-m3" });
    expect(await e.embedQuery("a ledger")).toEqual(await direct.embedQuery("a ledger"));
  });

  it("image generation accepts a trait or a mapped name and is served by the model it resolves to", async () => {
    const client = new ServiceClient({ context, baseUrl: emu.url, apiKey: KEYS[2] });
    const generate = (model: string) =>
      client.request("/image/generate", { method: "POST", body: { model, prompt: "hills", width: 16, height: 16 } });
    expect((await generate("highest_quality")).headers.model?.id).toBe("emu-image-hd");
    expect((await generate("dall-e-3")).headers.model?.id).toBe("emu-image");
    await expect(generate("no-such-image-model")).rejects.toBeInstanceOf(BadRequestError);
  });

  it("an unknown name (gpt-4 beside the mapped gpt-4o) is still ModelNotFoundError, with an empty profile", async () => {
    const m = new ChatService({ context, baseUrl: emu.url, apiKey: KEYS[0], model: "gpt-4", maxRetries: 0 });
    await expect(m.invoke("hi")).rejects.toBeInstanceOf(ModelNotFoundError);
    expect(await m.loadProfile()).toEqual({});
    const records = new ServiceClient({ context, baseUrl: emu.url }).models();
    expect(await records.resolve("gpt-4")).toBeUndefined();
    expect((await records.compatibilityMapping())?.get("gpt-4o")).toBe("emu-m");
    expect(await new ChatService({ context, baseUrl: emu.url, apiKey: KEYS[0], model: "gpt-4o" }).invoke("hi")).toBeTruthy();
  });
});
