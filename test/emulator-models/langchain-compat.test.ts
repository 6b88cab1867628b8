/**
 * The emulator speaks what real OpenAI-wire clients speak: @langchain/openai's ChatOpenAI (invoke, stream,
 * tools, structured output) and the openai SDK's stream parser, over loopback HTTP.
 */
import { HumanMessage, type ToolMessage, type AIMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { Emulator } from "langchain-service-emulator";
import { countTokens } from "../../packages/langchain-service-emulator/src/models/tokenizer.js";
import { KEY, startModelsEmulator } from "./helpers.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startModelsEmulator();
});
afterAll(async () => {
  await emu?.close();
});

const model = (name = "emu-s") => new ChatOpenAI({ model: name, apiKey: KEY, configuration: { baseURL: emu.url }, maxRetries: 0 });

describe("@langchain/openai ChatOpenAI against the emulator", () => {
  it("invokes and streams with usage metadata", async () => {
    const res = await model().invoke("Hello there");
    expect(res.content).toBe("Echo: Hello there");
    expect(res.usage_metadata?.output_tokens).toBeGreaterThan(0);
    let text = "";
    for await (const chunk of await model().stream("streaming works")) text += typeof chunk.content === "string" ? chunk.content : "";
    expect(text).toBe("Echo: streaming works");
  });

  it("runs a tool loop to a final answer", async () => {
    const weather = tool(async ({ city }) => `Sunny in ${city}`, {
      name: "get_weather",
      description: "Weather for a city",
      schema: z.object({ city: z.string() }),
    });
    const withTools = model().bindTools([weather]);
    const messages: (HumanMessage | AIMessage | ToolMessage)[] = [new HumanMessage("What's the weather in Paris?")];
    const first = await withTools.invoke(messages);
    expect(first.tool_calls?.[0]).toMatchObject({ name: "get_weather", args: { city: "Paris" } });
    messages.push(first);
    messages.push(await weather.invoke(first.tool_calls![0]!));
    const final = await withTools.invoke(messages);
    expect(final.tool_calls ?? []).toHaveLength(0);
    expect(final.content).toBe("Based on get_weather: Sunny in Paris");
  });

  it("returns structured output that parses with the zod schema", async () => {
    const Person = z.object({ name: z.string(), age: z.number() });
    const structured = model().withStructuredOutput(Person, { name: "person" });
    const out = await structured.invoke("The name is Ada and she is 36");
    expect(out).toEqual({ name: "Ada", age: 36 });
  });
});

describe("openai SDK stream parser", () => {
  it("parses the emulator's SSE, including the choices-less usage chunk", async () => {
    const client = new OpenAI({ apiKey: KEY, baseURL: emu.url, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: "emu-m",
      messages: [{ role: "user", content: "sdk stream" }],
      stream: true,
    });
    let text = "";
    let usage: unknown;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe("Echo: sdk stream");
    expect(usage).toMatchObject({ completion_tokens: countTokens("Echo: sdk stream") });
  });

  it("surfaces an in-band stream error as an exception", async () => {
    const client = new OpenAI({ apiKey: KEY, baseURL: emu.url, maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: "emu-s",
      messages: [{ role: "user", content: "fail later [[emu:error]] please" }],
      stream: true,
    });
    await expect(async () => {
      for await (const _ of stream) {
        // drain
      }
    }).rejects.toThrow(/error/i);
  });
});
