/**
 * Every request field the live service takes is a typed, camelCase option of `ChatService`, per instance and per
 * call (the call wins), validated before any request with the service's rules and sent under its wire name;
 * `developer` messages go out with the `developer` role. Against the emulator, which checks the same fields with
 * the live rules, so what is sent is also what the service accepts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { ChatService, type ChatRequestFields, type ChatServiceInput } from "../../src/chat/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ValidationError } from "../../src/http/errors.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: ["k1"] });
});
afterAll(() => emu?.close());

/** a model whose chat request bodies are recorded as they reach the wire */
function chat(fields: Partial<ChatServiceInput> = {}) {
  const bodies: any[] = [];
  const model = new ChatService({
    model: "emu-reasoner",
    apiKey: "k1",
    baseUrl: emu.url,
    fetch: async (input, init) => {
      if (String(input).endsWith("/chat/completions") && typeof init?.body === "string") bodies.push(JSON.parse(init.body));
      return globalThis.fetch(input, init);
    },
    ...fields,
  });
  return { model, bodies };
}

const ALL: ChatRequestFields = {
  reasoning: { effort: "low", enabled: true, summary: "concise" },
  promptCacheRetention: "24h",
  verbosity: "low",
  anonUserId: "end-user-7",
  minTemp: 0.2,
  maxTemp: 1.4,
  stopTokenIds: [151643, 151645],
  topLogprobs: 3,
  logprobs: true,
  repetitionPenalty: 1.1,
};
const WIRE = {
  reasoning: { effort: "low", enabled: true, summary: "concise" },
  prompt_cache_retention: "24h",
  verbosity: "low",
  anon_user_id: "end-user-7",
  min_temp: 0.2,
  max_temp: 1.4,
  stop_token_ids: [151643, 151645],
  top_logprobs: 3,
  logprobs: true,
  repetition_penalty: 1.1,
};

describe("request fields", () => {
  it("as constructor options: sent under their wire names, and the service takes them", async () => {
    const { model, bodies } = chat(ALL);
    const msg = await model.invoke("hello");
    expect(msg.text).toBe("Echo: hello");
    expect(bodies[0]).toMatchObject(WIRE);
  });

  it("per call: the same fields, winning over the constructor's", async () => {
    const { model, bodies } = chat({ verbosity: "high", anonUserId: "from-constructor" });
    await model.invoke("hello", { ...ALL });
    expect(bodies[0]).toMatchObject(WIRE);
    await model.invoke("hello");
    expect(bodies[1]).toMatchObject({ verbosity: "high", anon_user_id: "from-constructor" });
    expect(bodies[1]).not.toHaveProperty("prompt_cache_retention");
  });

  it("reasoning: { enabled: false } turns thinking off; an effort wins over it", async () => {
    const { model } = chat();
    expect((await model.invoke("hi")).additional_kwargs.reasoning_content).toMatch(/^Thinking about/);
    expect((await model.invoke("hi", { reasoning: { enabled: false } })).additional_kwargs.reasoning_content).toBeUndefined();
    expect((await model.invoke("hi", { reasoning: { enabled: false, effort: "low" } })).additional_kwargs.reasoning_content).toMatch(
      /^Thinking/,
    );
  });

  it("anonUserId is trimmed, and a blank one is not sent (as the service treats it)", async () => {
    const { model, bodies } = chat({ anonUserId: "  padded  " });
    await model.invoke("hi");
    await model.invoke("hi", { anonUserId: " per call " });
    expect(bodies.map((b) => b.anon_user_id)).toEqual(["padded", "per call"]);
    const blank = chat({ anonUserId: "   " });
    await blank.model.invoke("hi");
    await blank.model.invoke("hi", { anonUserId: "" }); // absent per call too: nothing to send
    for (const body of blank.bodies) expect(body).not.toHaveProperty("anon_user_id");
  });

  it.each([
    ["anonUserId", { anonUserId: "a||b" }],
    ["anonUserId", { anonUserId: "a".repeat(129) }],
    ["anonUserId", { anonUserId: "naïve" }],
    ["anonUserId", { anonUserId: 42 }],
    ["reasoning.effort", { reasoning: { effort: "extreme" } }],
    ["reasoning", { reasoning: { effort: "low", budget: 100 } }],
    ["reasoning.summary", { reasoning: { summary: "long" } }],
    ["reasoning.enabled", { reasoning: { enabled: "no" } }],
    ["verbosity", { verbosity: "loud" }],
    ["promptCacheRetention", { promptCacheRetention: "1w" }],
    ["minTemp", { minTemp: 3 }],
    ["maxTemp", { maxTemp: -0.5 }],
    ["minTemp", { minTemp: 1.5, maxTemp: 1 }],
    ["stopTokenIds", { stopTokenIds: ["eos"] }],
    ["stopTokenIds", { stopTokenIds: [] }],
    ["topLogprobs", { topLogprobs: 1.5 }],
    ["repetitionPenalty", { repetitionPenalty: -1 }],
  ])("a bad %s (%j) is a ValidationError naming it, in the constructor and per call, with nothing sent", async (name, bad) => {
    expect(() => chat(bad as never)).toThrow(ValidationError);
    expect(() => chat(bad as never)).toThrow(name);
    const { model, bodies } = chat();
    const err = await model.invoke("hi", bad as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as Error).message).toContain(name);
    expect(bodies).toHaveLength(0);
  });
});

describe("the developer role", () => {
  it("core's developer messages (['developer', …], { role: 'developer' }) go out as role developer; system stays system", async () => {
    const { model, bodies } = chat({ model: "emu-s" });
    const msg = await model.invoke([
      ["developer", "Be brief."],
      ["human", "hi"],
    ]);
    expect(msg.text).toBe("Echo: hi");
    expect(bodies[0].messages[0]).toEqual({ role: "developer", content: "Be brief." });
    await model.invoke([{ role: "developer", content: "Be brief." }, new SystemMessage("Be kind."), new HumanMessage("hi")]);
    expect(bodies[1].messages.map((m: any) => m.role)).toEqual(["developer", "system", "user"]);
  });
});
