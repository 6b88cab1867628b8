/**
 * The emulator gates chat requests as the live service does (its chat guide: "Capability gates, 400 before
 * inference"): a request asking a model for what its `model_spec.capabilities` lack is a 400 whose `issues[]`
 * entry names the field, nothing is charged, and these 400s count in the separate unsupported-feature budget
 * (200 per 30 s, `UNSUPPORTED_FEATURE_REQUESTS`), not in the error budget. It takes the live request fields with
 * the live rules (`anon_user_id`, `reasoning.enabled`, `top_logprobs` without the OpenAI cap), and its `/models`
 * records carry every flag the gates read. The seed keeps its own behaviour.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, MODELS, type Emulator } from "langchain-service-emulator";
import { chat, KEY, startModelsEmulator, user } from "./helpers.js";
import { testClock } from "../emulator/helpers.js";

const IMAGE = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const tool = {
  type: "function",
  function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
};
const schema = { type: "object", properties: { name: { type: "string" }, age: { type: "number" } }, required: ["name", "age"] };

let live: Emulator;
let seed: Emulator;
beforeAll(async () => {
  [live, seed] = await Promise.all([startModelsEmulator(), startModelsEmulator({ mode: "seed" })]);
});
afterAll(async () => {
  await Promise.all([live?.close(), seed?.close()]);
});

const charges = (emu: Emulator) => emu.ledger.apiKey(KEY)!.entries.length;

describe("capability gates (live)", () => {
  it.each([
    ["tools", "emu-basic", { tools: [tool] }, ["tools"]],
    ["tool_choice", "emu-basic", { tool_choice: "auto" }, ["tool_choice"]],
    ["parallel_tool_calls: true", "emu-basic", { parallel_tool_calls: true }, ["parallel_tool_calls"]],
    [
      "response_format json_schema",
      "emu-legacy",
      { response_format: { type: "json_schema", json_schema: { name: "p", schema } } },
      ["response_format"],
    ],
    ["response_format json_object", "emu-basic", { response_format: { type: "json_object" } }, ["response_format"]],
    ["logprobs", "emu-basic", { logprobs: true }, ["logprobs"]],
    ["top_logprobs", "emu-basic", { top_logprobs: 2 }, ["top_logprobs"]],
  ])("%s on a model without it: 400 naming the field, nothing charged", async (_name, model, extra, path) => {
    const before = charges(live);
    const r = await chat(live, { model, messages: [user("Weather in Paris?")], ...extra });
    expect(r.status).toBe(400);
    expect(r.json.issues.map((i: any) => i.path)).toEqual([path]);
    expect(r.json.issues[0].message).toMatch(/not supported by this model/);
    expect(charges(live)).toBe(before);
  });

  it.each([
    ["image_url", { type: "image_url", image_url: { url: IMAGE } }],
    ["input_audio", { type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } }],
    ["video_url", { type: "video_url", video_url: { url: "https://www.youtube.com/watch?v=x" } }],
  ])("%s parts: refused on a model without the input, served on one with it", async (_name, part) => {
    const content = [{ type: "text", text: "What is this?" }, part];
    const refused = await chat(live, { model: "emu-xs", messages: [user(content)] });
    expect(refused.status).toBe(400);
    expect(refused.json.issues.map((i: any) => i.path)).toEqual([["messages", 0, "content", 1]]);
    expect((await chat(live, { model: "emu-m", messages: [user(content)] })).status).toBe(200);
  });

  it("what the model has passes: response_format text, tools on a function-calling model, logprobs where supported", async () => {
    expect((await chat(live, { model: "emu-basic", messages: [user("hi")], response_format: { type: "text" } })).status).toBe(200);
    expect((await chat(live, { model: "emu-legacy", messages: [user("Weather in Paris?")], tools: [tool] })).status).toBe(200);
    expect((await chat(live, { model: "emu-s", messages: [user("hi")], logprobs: true, top_logprobs: 30 })).status).toBe(200);
  });

  it("the seed has no gates: tools reach a model without function calling; images are refused by the engine", async () => {
    const served = await chat(seed, { model: "emu-basic", messages: [user("Weather in Paris?")], tools: [tool] });
    expect(served.status).toBe(200);
    const image = await chat(seed, {
      model: "emu-xs",
      messages: [
        user([
          { type: "text", text: "x" },
          { type: "image_url", image_url: { url: IMAGE } },
        ]),
      ],
    });
    expect(image.status).toBe(400);
    expect(image.json.issues).toBeUndefined();
  });
});

describe("the unsupported-feature budget (live)", () => {
  it("gated 400s are not failures: the error budget stays whole, and more than the budget blocks with its own threshold", async () => {
    const clock = testClock({ frozen: true }); // the block ends when the test moves the emulator's clock on
    const emu = await startEmulator({
      now: clock.now,
      apiKeys: ["kb"],
      rateLimits: { unsupportedFeatureMaxFailures: 3, abuseBlockMs: 300 },
    });
    try {
      const gated = { model: "emu-basic", messages: [user("hi")], tools: [tool] };
      for (let i = 0; i < 3; i++) {
        const r = await chat(emu, gated, "kb");
        expect(r.status).toBe(400);
        expect(r.headers.get("x-ratelimit-remaining")).toBe("50");
      }
      const fourth = await chat(emu, gated, "kb");
      expect(fourth.status).toBe(400); // the 4th is counted: more than 3 now, so the next is blocked
      const blocked = await chat(emu, { model: "emu-s", messages: [user("hi")] }, "kb");
      expect(blocked.status).toBe(429);
      expect(blocked.json.error).toContain("(> 3)");
      clock.advance(350); // the block ends
      const log = await fetch(`${emu.url}/api_keys/rate_limits/log`, { headers: { authorization: "Bearer kb" } });
      expect(JSON.stringify(await log.json())).toContain("UNSUPPORTED_FEATURE_REQUESTS");
    } finally {
      await emu.close();
    }
  });

  it("an ordinary 400 still counts in the error budget", async () => {
    const emu = await startEmulator({ apiKeys: ["kc"] });
    try {
      const r = await chat(emu, { model: "emu-s", messages: [user("hi")], temperature: 7 }, "kc");
      expect(r.status).toBe(400);
      const next = await chat(emu, { model: "emu-s", messages: [user("hi")] }, "kc");
      expect(next.headers.get("x-ratelimit-remaining")).toBe("49");
    } finally {
      await emu.close();
    }
  });
});

describe("the live request fields", () => {
  it("anon_user_id: 1-128 printable ASCII without '||' (trimmed, blank is absent); the seed does not know it", async () => {
    for (const ok of ["user-42", "  padded  ", "", " ", "a".repeat(128)]) {
      expect((await chat(live, { model: "emu-s", messages: [user("hi")], anon_user_id: ok })).status, JSON.stringify(ok)).toBe(200);
    }
    for (const bad of ["a||b", "a".repeat(129), "naïve", "tab\there", 42]) {
      const r = await chat(live, { model: "emu-s", messages: [user("hi")], anon_user_id: bad });
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.json.issues[0].path).toEqual(["anon_user_id"]);
    }
    expect((await chat(seed, { model: "emu-s", messages: [user("hi")], anon_user_id: "user-42" })).status).toBe(400);
  });

  it("reasoning.enabled: false switches thinking off unless an effort is set; a bad effort or summary is a 400", async () => {
    const on = await chat(live, { model: "emu-reasoner", messages: [user("hi")] });
    expect(on.json.choices[0].message.reasoning_content).toMatch(/^Thinking about/);
    const off = await chat(live, { model: "emu-reasoner", messages: [user("hi")], reasoning: { enabled: false } });
    expect(off.json.choices[0].message.reasoning_content ?? undefined).toBeUndefined();
    const effort = await chat(live, { model: "emu-reasoner", messages: [user("hi")], reasoning: { enabled: false, effort: "low" } });
    expect(effort.json.choices[0].message.reasoning_content).toMatch(/^Thinking about/);
    for (const reasoning of [{ enabled: "no" }, { effort: "extreme" }, { summary: "long" }]) {
      expect((await chat(live, { model: "emu-reasoner", messages: [user("hi")], reasoning })).status, JSON.stringify(reasoning)).toBe(400);
    }
  });

  it("min_temp / max_temp, stop_token_ids, verbosity, prompt_cache_retention and the developer role are accepted; bad values are 400s", async () => {
    const good = {
      model: "emu-s",
      messages: [{ role: "developer", content: "Be brief." }, user("hi")],
      min_temp: 0.1,
      max_temp: 1.5,
      stop_token_ids: [151643],
      verbosity: "low",
      prompt_cache_retention: "24h",
    };
    const r = await chat(live, good);
    expect(r.status).toBe(200);
    expect(r.json.choices[0].message.content).toBe("Echo: hi");
    for (const bad of [
      { min_temp: 3 },
      { max_temp: -1 },
      { stop_token_ids: ["x"] },
      { verbosity: "loud" },
      { prompt_cache_retention: "1w" },
    ]) {
      expect((await chat(live, { ...good, ...bad })).status, JSON.stringify(bad)).toBe(400);
    }
  });

  it("an unknown model is a 404", async () => {
    const r = await chat(live, { model: "emu-nope", messages: [user("hi")] });
    expect(r.status).toBe(404);
  });
});

describe("GET /models carries what the gates read", () => {
  it("context and completion limits, and every capability flag, true or false", async () => {
    const res = await fetch(`${live.url}/models`);
    const { data } = (await res.json()) as { data: any[] };
    for (const m of MODELS) {
      const record = data.find((d) => d.id === m.id);
      expect(record.model_spec).toMatchObject({ availableContextTokens: m.contextTokens, maxCompletionTokens: m.maxCompletionTokens });
      expect(record.model_spec.capabilities).toMatchObject({
        supportsFunctionCalling: m.capabilities.supportsFunctionCalling,
        supportsResponseSchema: m.capabilities.supportsResponseSchema,
        supportsReasoning: m.capabilities.supportsReasoning,
        supportsVision: m.capabilities.supportsVision,
        supportsAudioInput: m.capabilities.supportsAudioInput,
        supportsVideoInput: m.capabilities.supportsVideoInput,
        supportsLogProbs: m.capabilities.supportsLogProbs,
      });
    }
    const basic = data.find((d) => d.id === "emu-basic").model_spec.capabilities;
    expect(basic).toMatchObject({
      supportsFunctionCalling: false,
      supportsResponseSchema: false,
      supportsVision: false,
      supportsReasoning: false,
      supportsLogProbs: false,
    });
    expect(data.find((d) => d.id === "emu-m").model_spec.capabilities).toMatchObject({
      supportsAudioInput: true,
      supportsVideoInput: true,
    });
  });
});

describe("the engine", () => {
  it("answers JSON for a schema given in the system prompt (a client without response formats)", async () => {
    const system = `Answer with one JSON object. It must be valid against this JSON schema:\n${JSON.stringify(schema)}`;
    const r = await chat(live, { model: "emu-basic", messages: [{ role: "system", content: system }, user("Anna is 31 years old.")] });
    expect(JSON.parse(r.json.choices[0].message.content)).toEqual({ name: "Anna", age: 31 });
  });

  it("tool_choice required after tool results calls a tool not called yet (an agent's structured-output tool)", async () => {
    const extract = { type: "function", function: { name: "extract", parameters: schema } };
    const first = await chat(live, {
      model: "emu-legacy",
      messages: [user("Weather in Paris? Anna is 31.")],
      tools: [tool, extract],
      tool_choice: "required",
    });
    const call = first.json.choices[0].message.tool_calls[0];
    const second = await chat(live, {
      model: "emu-legacy",
      messages: [
        user("Weather in Paris? Anna is 31."),
        { role: "assistant", content: null, tool_calls: first.json.choices[0].message.tool_calls },
        { role: "tool", tool_call_id: call.id, content: "sunny" },
      ],
      tools: [tool, extract],
      tool_choice: "required",
    });
    const calls = second.json.choices[0].message.tool_calls ?? [];
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.map((c: any) => c.function.name)).not.toContain(call.function.name);
  });
});
