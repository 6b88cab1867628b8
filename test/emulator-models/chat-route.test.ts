/** POST /chat/completions over loopback HTTP: validation, answers, usage, cost, ledger. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Emulator } from "langchain-service-emulator";
import { MESSAGE_OVERHEAD_TOKENS, SERVICE_SYSTEM_PROMPT } from "../../packages/langchain-service-emulator/src/models/prompt.js";
import { countTokens } from "../../packages/langchain-service-emulator/src/models/tokenizer.js";
import { chat, KEY, startModelsEmulator, user } from "./helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startModelsEmulator();
});
afterAll(async () => {
  await emu?.close();
});

describe("validation", () => {
  it("answers 400 DetailedError with zod issues for wrong types of known fields", async () => {
    const r = await chat(emu, { model: "emu-s", messages: [user("hi")], temperature: "hot" });
    expect(r.status).toBe(400);
    expect(r.json.error).toBe("Invalid request");
    expect(r.json.details.temperature._errors.length).toBeGreaterThan(0);
    expect(r.json.issues[0].path).toEqual(["temperature"]);
    const bad = await chat(emu, { model: "emu-s", messages: [{ role: "robot", content: "x" }] });
    expect(bad.status).toBe(400);
    const empty = await chat(emu, { model: "emu-s", messages: [] });
    expect(empty.status).toBe(400);
  });

  it("rejects unknown top-level fields (closed schema, as published) and drops unknown service_parameters keys", async () => {
    const closed = await chat(emu, { model: "emu-s", messages: [user("hi")], logit_bias: { "1": 2 }, service_tier: "auto" });
    expect(closed.status).toBe(400);
    expect(closed.json.details._errors.join(" ")).toMatch(/logit_bias/);
    const r = await chat(emu, { model: "emu-s", messages: [user("hi")], service_parameters: { unknown_flag: 1 } });
    expect(r.status).toBe(200);
    expect(r.json.service_parameters).not.toHaveProperty("unknown_flag");
  });

  it("rejects wrong types inside service_parameters and bad suffixes", async () => {
    const r = await chat(emu, { model: "emu-s", messages: [user("hi")], service_parameters: { enable_web_search: true } });
    expect(r.status).toBe(400);
    const e2ee = await chat(emu, { model: "emu-s:enable_e2ee=false", messages: [user("hi")] });
    expect(e2ee.status).toBe(400);
    expect(e2ee.json.error).toMatch(/enable_e2ee/);
    const unknown = await chat(emu, { model: "emu-s:nope=1", messages: [user("hi")] });
    expect(unknown.status).toBe(400);
  });

  it("rejects images on a model without vision and a prompt over the context size", async () => {
    const img = user([
      { type: "text", text: "what is this" },
      { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
    ]);
    expect((await chat(emu, { model: "emu-s", messages: [img] })).status).toBe(400);
    expect((await chat(emu, { model: "emu-m", messages: [img] })).status).toBe(200);
    const huge = "word ".repeat(40_000);
    const r = await chat(emu, { model: "emu-xs", messages: [user(huge)] });
    expect(r.status).toBe(400);
    expect(r.json.error).toMatch(/maximum context length/);
  });
});

describe("answers", () => {
  it("echoes the last user text with usage, cost and the parameters echo, and charges the ledger", async () => {
    const before = emu.ledger.apiKey(KEY)!.usd;
    const r = await chat(emu, { model: "emu-s", messages: [{ role: "system", content: "Be brief." }, user("  Hello, emulator!  ")] });
    expect(r.status).toBe(200);
    expect(r.json.object).toBe("chat.completion");
    expect(r.json.id).toMatch(/^chatcmpl-/);
    expect(r.json.model).toBe("emu-s");
    expect(r.json.choices[0].message).toEqual({ role: "assistant", content: "Echo: Hello, emulator!" });
    expect(r.json.choices[0].finish_reason).toBe("stop");
    const u = r.json.usage;
    expect(u.completion_tokens).toBe(countTokens("Echo: Hello, emulator!"));
    const systemPrompt = MESSAGE_OVERHEAD_TOKENS + countTokens(SERVICE_SYSTEM_PROMPT);
    const expectedPrompt = systemPrompt + 2 * MESSAGE_OVERHEAD_TOKENS + countTokens("Be brief.") + countTokens("  Hello, emulator!  ");
    expect(u.prompt_tokens).toBe(expectedPrompt);
    expect(u.total_tokens).toBe(u.prompt_tokens + u.completion_tokens);
    expect(r.json.cost.usd).toBeGreaterThan(0);
    expect(r.json.cost.diem).toBe(0);
    expect(emu.ledger.apiKey(KEY)!.usd).toBeCloseTo(before - r.json.cost.usd, 6);
    const entry = emu.ledger.apiKey(KEY)!.entries.at(-1)!;
    expect(entry).toMatchObject({ type: "CHARGE", kind: "chat", modelId: "emu-s", requestId: r.json.id });
    expect(r.json.service_parameters).toMatchObject({ enable_e2ee: false, enable_web_search: "off", include_service_system_prompt: true });
  });

  it("include_service_system_prompt false removes the service prompt's tokens", async () => {
    const on = await chat(emu, { model: "emu-s", messages: [user("count me")] });
    const off = await chat(emu, {
      model: "emu-s",
      messages: [user("count me")],
      service_parameters: { include_service_system_prompt: false },
    });
    expect(on.json.usage.prompt_tokens - off.json.usage.prompt_tokens).toBe(MESSAGE_OVERHEAD_TOKENS + countTokens(SERVICE_SYSTEM_PROMPT));
    expect(off.json.service_parameters.include_service_system_prompt).toBe(false);
  });

  it("n > 1 gives distinguishable choices; logprobs are deterministic", async () => {
    const r = await chat(emu, { model: "emu-s", messages: [user("pick")], n: 3, logprobs: true, top_logprobs: 2 });
    const contents = r.json.choices.map((c: any) => c.message.content);
    expect(contents).toEqual(["Echo: pick (choice 1)", "Echo: pick (choice 2)", "Echo: pick (choice 3)"]);
    const lp = r.json.choices[0].logprobs.content;
    expect(lp.map((t: any) => t.token).join("")).toBe(contents[0]);
    expect(lp[0].top_logprobs).toHaveLength(2);
    expect(lp[0].logprob).toBeLessThan(0);
    const again = await chat(emu, { model: "emu-s", messages: [user("pick")], n: 3, logprobs: true, top_logprobs: 2 });
    expect(again.json.choices[0].logprobs).toEqual(r.json.choices[0].logprobs);
    expect(r.json.prompt_logprobs).toBeNull();
  });

  it("max_tokens cuts with finish_reason length; stop cuts at the stop string; [[emu:tokens=N]] gives N tokens", async () => {
    const cut = await chat(emu, { model: "emu-s", messages: [user("one two three four five six")], max_tokens: 3 });
    expect(cut.json.choices[0].message.content).toBe("Echo: one");
    expect(cut.json.choices[0].finish_reason).toBe("length");
    expect(cut.json.choices[0].stop_reason).toBe("length");
    expect(cut.json.usage.completion_tokens).toBe(3);
    const stopped = await chat(emu, { model: "emu-s", messages: [user("alpha beta gamma")], stop: [" gamma"] });
    expect(stopped.json.choices[0].message.content).toBe("Echo: alpha beta");
    const n = await chat(emu, { model: "emu-s", messages: [user("[[emu:tokens=250]] go")] });
    expect(n.json.usage.completion_tokens).toBe(250);
    expect(countTokens(n.json.choices[0].message.content)).toBe(250);
  });

  it("decodes text files into what the model sees", async () => {
    const file = {
      type: "file",
      file: { filename: "note.txt", file_data: `data:text/plain;base64,${Buffer.from("secret plan: ship it").toString("base64")}` },
    };
    const r = await chat(emu, { model: "emu-s", messages: [user([{ type: "text", text: "Summarize:" }, file])] });
    expect(r.json.choices[0].message.content).toBe("Echo: Summarize:\nsecret plan: ship it");
  });

  it("json_schema structured output conforms; json_object wraps the answer", async () => {
    const schema = {
      type: "object",
      properties: { city: { type: "string" }, temperature: { type: "number" } },
      required: ["city", "temperature"],
      additionalProperties: false,
    };
    const r = await chat(emu, {
      model: "emu-s",
      messages: [user("The city is Oslo and the temperature is 12 degrees")],
      response_format: { type: "json_schema", json_schema: { name: "weather", schema, strict: true } },
    });
    expect(JSON.parse(r.json.choices[0].message.content)).toEqual({ city: "Oslo", temperature: 12 });
    const o = await chat(emu, { model: "emu-s", messages: [user("hi")], response_format: { type: "json_object" } });
    expect(JSON.parse(o.json.choices[0].message.content)).toEqual({ answer: "Echo: hi" });
    const legacy = await chat(emu, {
      model: "emu-legacy",
      messages: [user("hi")],
      response_format: { type: "json_schema", json_schema: { name: "x", schema } },
    });
    expect(legacy.status).toBe(400);
  });

  it("[[emu:error]] without streaming answers 500 and charges nothing", async () => {
    const before = emu.ledger.apiKey(KEY)!.entries.length;
    const r = await chat(emu, { model: "emu-s", messages: [user("[[emu:error]] boom")] });
    expect(r.status).toBe(500);
    expect(emu.ledger.apiKey(KEY)!.entries.length).toBe(before);
  });

  it("serves another brand's wire names", async () => {
    const acme = await startModelsEmulator({ brand: "acme" });
    try {
      const r = await chat(acme, { model: "emu-xs", messages: [user("hi")], acme_parameters: { include_acme_system_prompt: false } });
      expect(r.status).toBe(200);
      expect(r.json.acme_parameters).toMatchObject({ include_acme_system_prompt: false, enable_e2ee: true });
      expect(r.json).not.toHaveProperty("service_parameters");
      expect(r.headers.get("x-acme-model-id")).toBe("emu-xs");
    } finally {
      await acme.close();
    }
  });
});

describe("wiring with the server", () => {
  it("reports total tokens to the token rate limit and is cut mid-stream by the stream fault", async () => {
    const limited = await startModelsEmulator({ rateLimits: { enabled: true } });
    try {
      const r = await chat(limited, { model: "emu-s", messages: [user("count my tokens")] });
      const limit = Number(r.headers.get("x-ratelimit-limit-tokens"));
      expect(limit - Number(r.headers.get("x-ratelimit-remaining-tokens"))).toBe(r.json.usage.total_tokens);
      expect(r.headers.get("x-service-model-id")).toBe("emu-s");

      limited.setFaults({ streamCutAfter: 2 });
      const res = await fetch(`${limited.url}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "emu-s", stream: true, messages: [user("a stream that will be cut before its end")] }),
      });
      expect(res.status).toBe(200);
      let received = "";
      await expect(
        (async () => {
          const reader = res.body!.getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            received += Buffer.from(value).toString("utf8");
          }
        })(),
      ).rejects.toThrow();
      expect(received).not.toContain("[DONE]");
    } finally {
      await limited.close();
    }
  });
});

describe("prompt caching", () => {
  it("reports cache creation then cached tokens for a repeated prompt_cache_key prefix", async () => {
    const turn1 = [{ role: "system", content: "You answer questions about caching." }, user("first question")];
    const a = await chat(emu, { model: "emu-m", messages: turn1, prompt_cache_key: "conv-1" });
    expect(a.json.usage.prompt_tokens_details.cached_tokens).toBe(0);
    expect(a.json.usage.prompt_tokens_details.cache_creation_input_tokens).toBe(a.json.usage.prompt_tokens);
    const turn2 = [...turn1, { role: "assistant", content: a.json.choices[0].message.content }, user("second question")];
    const b = await chat(emu, { model: "emu-m", messages: turn2, prompt_cache_key: "conv-1" });
    expect(b.json.usage.prompt_tokens_details.cached_tokens).toBe(a.json.usage.prompt_tokens);
    // cached tokens are billed at the cache_input price: cheaper than the same prompt uncached
    const c = await chat(emu, { model: "emu-m", messages: turn2, prompt_cache_key: "conv-other" });
    expect(c.json.usage.prompt_tokens_details.cached_tokens).toBe(0);
    expect(b.json.cost.usd).toBeLessThan(c.json.cost.usd);
  });

  it("caches system prompts automatically and cache_control parts on first sight", async () => {
    const system = { role: "system", content: "A long and stable system prompt for automatic caching." };
    const first = await chat(emu, { model: "emu-s", messages: [system, user("q1")] });
    expect(first.json.usage.prompt_tokens_details.cache_creation_input_tokens).toBeGreaterThan(0);
    const second = await chat(emu, { model: "emu-s", messages: [system, user("q2")] });
    expect(second.json.usage.prompt_tokens_details.cached_tokens).toBe(first.json.usage.prompt_tokens_details.cache_creation_input_tokens);
    const marked = user([{ type: "text", text: "A big document to keep.", cache_control: { type: "ephemeral" } }]);
    const m1 = await chat(emu, { model: "emu-s", messages: [marked] });
    expect(m1.json.usage.prompt_tokens_details.cache_creation_input_tokens).toBeGreaterThan(0);
    const m2 = await chat(emu, { model: "emu-s", messages: [marked] });
    expect(m2.json.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(0);
  });
});
