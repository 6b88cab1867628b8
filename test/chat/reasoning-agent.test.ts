/**
 * Multi-turn tool calling with the reasoning model through a LangGraph agent loop. `emu-reasoner` signs each
 * turn's reasoning together with its tool calls and answers 400 when a tool-call turn comes back without its
 * `reasoning_details` or its `thought_signature`, or with them altered — so these tests fail if either is
 * dropped or changed on any path (invoke, `.stream()`-based "messages" streaming, and the v3 content-block
 * event protocol).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { tool } from "@langchain/core/tools";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { MemorySaver } from "@langchain/langgraph";
import { ChatOpenAI } from "@langchain/openai";
import { ChatService } from "../../src/chat/index.js";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { BadRequestError } from "../../src/http/errors.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: ["k1"] });
});
afterAll(() => emu?.close());

const weather = tool(async ({ city }) => `It is sunny and 21C in ${city}.`, {
  name: "get_weather",
  description: "Current weather in a city",
  schema: z.object({ city: z.string() }),
});
const magic = tool(async ({ input }) => String(input + 2), {
  name: "magic_function",
  description: "Applies a magic function to an input.",
  schema: z.object({ input: z.number().int() }),
});

function reasoner(fields: Record<string, unknown> = {}) {
  return new ChatService({ model: "emu-reasoner", apiKey: "k1", baseUrl: emu.url, ...fields });
}

function lastAi(messages: BaseMessage[]): AIMessage {
  return messages.filter((m) => m.getType() === "ai").at(-1) as AIMessage;
}

/** Two user turns, each with a tool round, in one thread: every later request carries the earlier details. */
async function conversation(
  run: (agent: ReturnType<typeof createReactAgent>, text: string, config: object) => Promise<void>,
  llm: ChatService | ChatOpenAI,
) {
  const agent = createReactAgent({ llm, tools: [weather, magic], checkpointer: new MemorySaver() });
  const config = { configurable: { thread_id: `t-${Math.random()}` } };
  await run(agent, "Use get_weather for Paris please", config);
  await run(agent, "Now use magic_function on 4", config);
  return (await agent.getState(config)).values.messages as BaseMessage[];
}

function checkTranscript(messages: BaseMessage[]) {
  const ais = messages.filter((m) => m.getType() === "ai") as AIMessage[];
  const toolTurns = ais.filter((m) => m.tool_calls?.length);
  expect(toolTurns.map((m) => m.tool_calls![0]!.name)).toEqual(["get_weather", "magic_function"]);
  expect(messages.filter((m) => m.getType() === "tool")).toHaveLength(2);
  const final = lastAi(messages);
  expect(final.text).toContain("Based on magic_function: 6");
  expect(ais.find((m) => m.text.includes("Based on get_weather"))).toBeDefined();
}

describe("reasoning_details survive an agent loop", () => {
  it("invoke path", async () => {
    const messages = await conversation(async (agent, text, config) => {
      await agent.invoke({ messages: [new HumanMessage(text)] }, config);
    }, reasoner());
    checkTranscript(messages);
    const toolTurn = messages.find((m) => m.getType() === "ai" && (m as AIMessage).tool_calls?.length) as AIMessage;
    expect(toolTurn.additional_kwargs.reasoning_details).toHaveLength(2);
    expect(toolTurn.additional_kwargs.thought_signature).toMatch(/^emu-ts\./);
  });

  it("streaming model, streamMode 'messages' (the .stream() chunk path)", async () => {
    const seen: string[] = [];
    const messages = await conversation(
      async (agent, text, config) => {
        for await (const [msg] of await agent.stream({ messages: [new HumanMessage(text)] }, { ...config, streamMode: "messages" })) {
          seen.push((msg as BaseMessage).getType());
        }
      },
      reasoner({ streaming: true }),
    );
    checkTranscript(messages);
    expect(seen).toContain("ai");
  });

  it("LangGraph v3 streaming (content-block events; reasoning kept on the reasoning block)", async () => {
    const messages = await conversation(async (agent, text, config) => {
      const run = await agent.streamEvents({ messages: [new HumanMessage(text)] }, { ...config, version: "v3" } as never);
      for await (const _ of run as AsyncIterable<unknown>);
    }, reasoner());
    checkTranscript(messages);
    // the messages were assembled from content-block events (v1), so the details rode on the reasoning block
    const toolTurn = messages.find((m) => m.getType() === "ai" && (m as AIMessage).tool_calls?.length) as AIMessage;
    expect(toolTurn.response_metadata.output_version).toBe("v1");
    const block = (toolTurn.content as Array<Record<string, unknown>>).find((b) => b.type === "reasoning");
    expect(block?.reasoning_details).toHaveLength(2);
    expect((toolTurn.response_metadata.message_extras as Record<string, unknown>).thought_signature).toMatch(/^emu-ts\./);
  });

  it("control: ChatOpenAI drops reasoning_details and the same loop fails", async () => {
    const openai = new ChatOpenAI({ model: "emu-reasoner", apiKey: "k1", configuration: { baseURL: emu.url }, maxRetries: 0 });
    await expect(
      conversation(async (agent, text, config) => {
        await agent.invoke({ messages: [new HumanMessage(text)] }, config);
      }, openai),
    ).rejects.toThrow(/reasoning/i);
  });

  it("altered or missing reasoning_details are refused by the service", async () => {
    const m = reasoner().bindTools([weather]);
    const question = new HumanMessage("Use get_weather for Rome");
    const first = (await m.invoke([question])) as AIMessage;
    expect(first.tool_calls).toHaveLength(1);
    const result = new ToolMessage({ content: "sunny", tool_call_id: first.tool_calls![0]!.id! });
    const ok = await m.invoke([question, first, result]);
    expect(ok.text).toContain("Based on get_weather");

    const details = structuredClone(first.additional_kwargs.reasoning_details) as Array<Record<string, unknown>>;
    details[0]!.text = `${String(details[0]!.text)} (edited)`;
    const altered = new AIMessage({ ...first, additional_kwargs: { ...first.additional_kwargs, reasoning_details: details } });
    await expect(m.invoke([question, altered, result])).rejects.toBeInstanceOf(BadRequestError);
    const dropped = new AIMessage({ content: first.content, tool_calls: first.tool_calls, id: first.id });
    await expect(m.invoke([question, dropped, result])).rejects.toBeInstanceOf(BadRequestError);
  });
});
