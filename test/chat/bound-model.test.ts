/**
 * What a `ChatOpenAI` user does with a configured model (`bindTools(...)`, `withConfig(...)`) must keep working
 * on `ChatService`: `ChatOpenAI.withConfig` returns a chat model, core's returns a plain `RunnableBinding`
 * (no `withStructuredOutput`/`bindTools`, and its `streamEvents()` has no content-block protocol).
 * Also `generate()` totals token usage over its prompts (`llmOutput.tokenUsage`), as `ChatOpenAI` does.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { tool } from "@langchain/core/tools";
import { RunnableBinding } from "@langchain/core/runnables";
import { ChatService } from "../../src/chat/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: ["k1"] });
});
afterAll(() => emu?.close());

/** a model whose request bodies are recorded */
function chat() {
  const bodies: any[] = [];
  const model = new ChatService({
    model: "emu-xs",
    apiKey: "k1",
    baseUrl: emu.url,
    fetch: async (input, init) => {
      if (typeof init?.body === "string") bodies.push(JSON.parse(init.body));
      return globalThis.fetch(input, init);
    },
  });
  return { model, bodies };
}

const magic = tool(async ({ input }) => String(input + 2), {
  name: "magic_function",
  description: "Applies a magic function to an input.",
  schema: z.object({ input: z.number().int() }),
});
const weather = tool(async ({ city }) => `It is sunny in ${city}.`, {
  name: "get_weather",
  description: "Current weather in a city",
  schema: z.object({ city: z.string() }),
});

describe("a bound model (bindTools / withConfig)", () => {
  it("streamEvents() without a version gives the content-block stream, with the bound options on the wire", async () => {
    const { model, bodies } = chat();
    const bound = model.bindTools([magic], { seed: 7 });
    expect(bound).toBeInstanceOf(RunnableBinding);
    const stream = (bound as any).streamEvents("What is magic_function(3)?");
    const msg = await stream;
    expect(msg.tool_calls).toHaveLength(1);
    expect(msg.tool_calls[0]).toMatchObject({ name: "magic_function", args: { input: 3 } });
    expect(msg.usage_metadata.total_tokens).toBeGreaterThan(0);
    expect(bodies.at(-1)).toMatchObject({ stream: true, seed: 7, tools: [{ function: { name: "magic_function" } }] });

    const text = (model.withConfig({ serviceParameters: { enableWebSearch: "off" } }) as any).streamEvents("hello events").text;
    let out = "";
    for await (const t of text) out += t;
    expect(out).toBe("Echo: hello events");
    expect(bodies.at(-1).service_parameters).toEqual({ enable_web_search: "off" });
  });

  it("the legacy streamEvents v2 of a bound model is unchanged", async () => {
    const { model } = chat();
    const names: string[] = [];
    for await (const e of model.bindTools([magic]).streamEvents("magic_function(3)", { version: "v2" })) names.push(e.event);
    expect(names[0]).toBe("on_chat_model_start");
    expect(names.at(-1)).toBe("on_chat_model_end");
  });

  it("withStructuredOutput on a configured model keeps its call options", async () => {
    const { model, bodies } = chat();
    const configured = model.withConfig({ serviceParameters: { enableWebSearch: "off" }, seed: 3 });
    const Person = z.object({ name: z.string(), age: z.number() });
    for (const method of ["jsonSchema", "functionCalling"] as const) {
      const out = await configured.withStructuredOutput(Person, { method }).invoke("Anna is 31 years old.");
      expect(out).toEqual({ name: "Anna", age: 31 });
      expect(bodies.at(-1)).toMatchObject({ seed: 3, service_parameters: { enable_web_search: "off" } });
    }
    const raw = await configured.withStructuredOutput(Person, { includeRaw: true }).invoke("Anna is 31 years old.");
    expect(raw.parsed).toEqual({ name: "Anna", age: 31 });
  });

  it("bindTools on a configured model replaces the tools and keeps the other options", async () => {
    const { model, bodies } = chat();
    const twice = model.bindTools([magic], { seed: 5 }).bindTools([weather], { tool_choice: "get_weather" });
    expect(twice).toBeInstanceOf(RunnableBinding);
    const msg = await twice.invoke("Tell me about Paris");
    expect(msg.tool_calls![0]!.name).toBe("get_weather");
    expect(bodies.at(-1).tools.map((t: any) => t.function.name)).toEqual(["get_weather"]);
    expect(bodies.at(-1).seed).toBe(5);
  });
});

describe("generate()", () => {
  it("totals token usage over its prompts in llmOutput, like ChatOpenAI", async () => {
    const { model } = chat();
    const result = await model.generate([["one"], ["two"]]);
    const usages = result.generations.map((g) => (g[0] as any).message.usage_metadata);
    expect(result.llmOutput?.tokenUsage).toEqual({
      promptTokens: usages[0].input_tokens + usages[1].input_tokens,
      completionTokens: usages[0].output_tokens + usages[1].output_tokens,
      totalTokens: usages[0].total_tokens + usages[1].total_tokens,
    });
  });
});

describe("outputVersion v1 streaming", () => {
  it("a reasoning model's merged v1 stream has its reasoning once, and the next turn still gets reasoning_details", async () => {
    const model = new ChatService({ model: "emu-reasoner", apiKey: "k1", baseUrl: emu.url });
    let acc: any;
    for await (const c of await model.stream("hello [[emu:tokens=6]]", { outputVersion: "v1" })) acc = acc ? acc.concat(c) : c;
    const reasoning = (acc.content as any[])
      .filter((b) => b.type === "reasoning")
      .map((b) => b.reasoning)
      .join("");
    const invoked = await model.invoke("hello [[emu:tokens=6]]", { outputVersion: "v1" });
    const expected = (invoked.content as any[])
      .filter((b) => b.type === "reasoning")
      .map((b) => b.reasoning)
      .join("");
    expect(expected).toMatch(/^Thinking about/);
    expect(reasoning).toBe(expected);
    expect((acc.content as any[]).at(-1).type).toBe("text");
    expect(acc.additional_kwargs.reasoning_details.length).toBeGreaterThan(0);
  });
});
