/**
 * `strip_thinking_response` removes `reasoning_content` as well as `<think>` blocks on the live service. Against the
 * live emulator: invoke, stream and streaming invoke of a reasoning model carry no `reasoning_content` (nor a
 * reasoning delta) while its reasoning tokens are still reported, and an agent's tool-call turns still go back with
 * their signed `reasoning_details` and `thought_signature` alone, which the service verifies, on every path.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { tool } from "@langchain/core/tools";
import { HumanMessage, type AIMessage, type AIMessageChunk } from "@langchain/core/messages";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { MemorySaver } from "@langchain/langgraph";
import { ChatService } from "../../src/chat/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: ["k1"], rateLimits: { enabled: false } });
});
afterAll(() => emu?.close());

const model = (fields: Record<string, unknown> = {}) =>
  new ChatService({ model: "emu-reasoner", apiKey: "k1", baseUrl: emu.url, serviceParameters: { stripThinkingResponse: true }, ...fields });

async function drain(stream: AsyncIterable<AIMessageChunk>) {
  const chunks: AIMessageChunk[] = [];
  let merged: AIMessageChunk | undefined;
  for await (const c of stream) {
    chunks.push(c);
    merged = merged ? merged.concat(c) : c;
  }
  return { chunks, merged: merged! };
}

describe("strip_thinking_response on a reasoning model", () => {
  it("invoke: no reasoning_content; the reasoning tokens are still reported", async () => {
    const plain = await model({ serviceParameters: {} }).invoke("think about it");
    expect(plain.additional_kwargs.reasoning_content).toBe("Thinking about: think about it");
    const msg = await model().invoke("think about it");
    expect(msg.text).toBe(plain.text);
    expect(msg.additional_kwargs).not.toHaveProperty("reasoning_content");
    expect(msg.usage_metadata!.output_token_details!.reasoning).toBeGreaterThan(0);
  });

  it("stream and streaming invoke: no reasoning delta, the same answer as invoke", async () => {
    const json = await model().invoke("think about it");
    const { chunks, merged } = await drain(await model().stream("think about it"));
    expect(chunks.some((c) => c.additional_kwargs.reasoning_content)).toBe(false);
    expect(merged.text).toBe(json.text);
    expect(merged.additional_kwargs).not.toHaveProperty("reasoning_content");
    expect(merged.additional_kwargs.reasoning_details).toEqual(json.additional_kwargs.reasoning_details);
    const streamingInvoke = await model({ streaming: true }).invoke("think about it");
    expect(streamingInvoke.additional_kwargs).not.toHaveProperty("reasoning_content");
    expect(streamingInvoke.text).toBe(json.text);
  });

  it.each(["invoke", "stream", "v3 content-block events"] as const)(
    "%s: an agent's tool-call turns go back with their signed details alone",
    async (path) => {
      const weather = tool(async ({ city }) => `It is sunny in ${city}.`, {
        name: "get_weather",
        description: "Current weather in a city",
        schema: z.object({ city: z.string() }),
      });
      const agent = createReactAgent({
        llm: model(path === "stream" ? { streaming: true } : {}),
        tools: [weather],
        checkpointer: new MemorySaver(),
      });
      const config = { configurable: { thread_id: `t-${path}` } };
      for (const text of ["Use get_weather for Paris please", "Use get_weather for Rome please"]) {
        const input = { messages: [new HumanMessage(text)] };
        if (path === "invoke") await agent.invoke(input, config);
        else if (path === "stream") for await (const _ of await agent.stream(input, { ...config, streamMode: "messages" }));
        else for await (const _ of (await agent.streamEvents(input, { ...config, version: "v3" } as never)) as AsyncIterable<unknown>);
      }
      const messages = (await agent.getState(config)).values.messages as AIMessage[];
      const ais = messages.filter((m) => m.getType() === "ai");
      expect(ais.filter((m) => m.tool_calls?.length)).toHaveLength(2);
      expect(ais.at(-1)!.text).toContain("Based on get_weather");
      for (const m of ais) expect(m.additional_kwargs.reasoning_content).toBeUndefined();
    },
  );
});
