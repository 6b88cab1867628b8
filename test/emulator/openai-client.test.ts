/**
 * The official `openai` npm client (v6), unmodified, pointed at the emulator: a chat call and a stream
 * complete, and the service headers come through.
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";

let emu: Emulator;
let client: OpenAI;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: ["sk-emu-openai"] });
  client = new OpenAI({ apiKey: "sk-emu-openai", baseURL: emu.url, maxRetries: 0 });
});
afterAll(() => emu?.close());

describe("openai client against the emulator", () => {
  it("chat.completions.create answers and charges the key", async () => {
    const before = emu.account("sk-emu-openai")!;
    const startUsd = before.usd + before.diem;
    const { data, response } = await client.chat.completions
      .create({ model: "emu-s", messages: [{ role: "user", content: "Say hello in three words." }] })
      .withResponse();
    expect(data.object).toBe("chat.completion");
    expect(typeof data.choices[0]?.message.content).toBe("string");
    expect(data.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(data.usage?.total_tokens).toBeGreaterThan(0);
    expect(response.headers.get("x-service-model-id")).toBe("emu-s");
    expect(response.headers.get("cf-ray")).toMatch(/-EMU$/);
    const after = emu.account("sk-emu-openai")!;
    expect(after.usd + after.diem).toBeLessThan(startUsd);
  });

  it("a streamed chat completes with content deltas", async () => {
    const stream = await client.chat.completions.create({
      model: "emu-m",
      messages: [{ role: "user", content: "Count to five." }],
      stream: true,
    });
    let text = "";
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.object).toBe("chat.completion.chunk");
      text += chunk.choices[0]?.delta?.content ?? "";
    }
    expect(chunks).toBeGreaterThan(1);
    expect(text.length).toBeGreaterThan(0);
  });

  it("errors arrive as the client's typed errors", async () => {
    const bad = new OpenAI({ apiKey: "wrong", baseURL: emu.url, maxRetries: 0 });
    await expect(bad.chat.completions.create({ model: "emu-s", messages: [{ role: "user", content: "hi" }] })).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
    await expect(client.chat.completions.create({ model: "emu-pro", messages: [{ role: "user", content: "hi" }] })).rejects.toMatchObject({
      status: 401,
    });
  });
});

describe("openai client against the strict emulator under brand venice", () => {
  let venice: Emulator;
  beforeAll(async () => {
    venice = await startEmulator({ brand: "venice", chain: true, apiKeys: ["sk-venice"] });
  });
  afterAll(() => venice?.close());

  it("an API-key call with venice_parameters passes the closed request schema; the headers carry the brand", async () => {
    const sdk = new OpenAI({ apiKey: "sk-venice", baseURL: venice.url, maxRetries: 0 });
    const { data, response } = await sdk.chat.completions
      .create({
        model: "emu-s",
        messages: [{ role: "user", content: "hello" }],
        venice_parameters: { include_venice_system_prompt: false },
      } as never)
      .withResponse();
    expect(data.object).toBe("chat.completion");
    expect(response.headers.get("x-venice-model-id")).toBe("emu-s");
  });

  it("with only a wallet, through the package's stack as its fetch: signs in, pays exactly the offer, answers", async () => {
    const { createServiceFetch } = await import("../../src/stack.js");
    const { EvmWallet } = await import("../../src/evm/index.js");
    const wallet = new EvmWallet(venice.chain!.accounts[1]!.privateKey);
    const fetch = createServiceFetch({
      baseUrl: venice.url,
      brand: "venice",
      wallet,
      payment: { allowedPayees: [venice.chain!.treasury] },
    });
    const sdk = new OpenAI({ apiKey: "-", baseURL: venice.url, fetch, maxRetries: 0 });
    const data = await sdk.chat.completions.create({ model: "emu-s", messages: [{ role: "user", content: "hello" }] });
    expect(data.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(
      venice
        .account(wallet.address)!
        .entries.filter((e) => e.type === "TOP_UP")
        .map((e) => e.amount),
    ).toEqual([5]);
  });
});
