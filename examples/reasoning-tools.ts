/**
 * A reasoning model in a multi-turn tool loop. Reasoning models sign their reasoning together with their tool
 * calls (`additional_kwargs.reasoning_details`) and refuse a later turn in which those details come back
 * missing or altered. `ChatService` sends them back unchanged, so the agent can keep calling tools across
 * turns (plain `ChatOpenAI` drops them and the second request fails).
 *
 *   npm run example:reasoning-tools
 *   SERVICE_BASE_URL=https://.../api/v1 SERVICE_API_KEY=... SERVICE_MODEL=<a reasoning model> npm run example:reasoning-tools
 */
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { createAgent, tool } from "langchain";
import { MemorySaver } from "@langchain/langgraph";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { ChatService } from "../src/index.js";
import { startEmulator } from "langchain-service-emulator";

export interface Options {
  baseUrl?: string;
  apiKey?: string;
  log?: (line: string) => void;
}

export interface Turn {
  question: string;
  /** the model's reasoning on this turn (`additional_kwargs.reasoning_content`) */
  reasoning: string[];
  /** tool calls made on this turn */
  toolCalls: string[];
  /** how many `reasoning_details` each tool-calling message carried (they go back with every later request) */
  reasoningDetails: number[];
  answer: string;
}

export interface Result {
  turns: Turn[];
  /** the whole conversation as the agent keeps it */
  messages: BaseMessage[];
}

const getWeather = tool(async ({ city }) => `It is sunny and 21C in ${city}.`, {
  name: "get_weather",
  description: "Current weather in a city",
  schema: z.object({ city: z.string().describe("city name") }),
});

const convertTemperature = tool(async ({ celsius }) => `${((celsius * 9) / 5 + 32).toFixed(1)}F`, {
  name: "celsius_to_fahrenheit",
  description: "Converts a temperature from Celsius to Fahrenheit",
  schema: z.object({ celsius: z.number().describe("temperature in Celsius") }),
});

export async function main(options: Options = {}): Promise<Result> {
  const log = options.log ?? console.log;
  let baseUrl = options.baseUrl ?? process.env.SERVICE_BASE_URL;
  let apiKey = options.apiKey ?? process.env.SERVICE_API_KEY;
  const emulator = baseUrl ? undefined : await startEmulator({ apiKeys: [{ key: "example-key", usd: 5 }] });
  if (emulator) [baseUrl, apiKey] = [emulator.url, "example-key"];
  try {
    const model = new ChatService({ model: process.env.SERVICE_MODEL ?? "emu-reasoner", baseUrl, apiKey });
    // the checkpointer keeps the thread: the second question is asked with the first turn in the history
    const agent = createAgent({ model, tools: [getWeather, convertTemperature], checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: "weather-chat" } };

    const turns: Turn[] = [];
    let messages: BaseMessage[] = [];
    for (const question of ["Use get_weather for Paris please", "Now use celsius_to_fahrenheit on 21"]) {
      const state = await agent.invoke({ messages: [new HumanMessage(question)] }, config);
      const fresh = state.messages.slice(messages.length + 1); // this turn's messages after the question
      messages = state.messages;
      const ais = fresh.filter((m): m is AIMessage => AIMessage.isInstance(m));
      const turn: Turn = {
        question,
        reasoning: ais.map((m) => m.additional_kwargs.reasoning_content).filter((r): r is string => typeof r === "string"),
        toolCalls: ais.flatMap((m) => m.tool_calls ?? []).map((c) => `${c.name}(${JSON.stringify(c.args)})`),
        reasoningDetails: ais
          .filter((m) => m.tool_calls?.length)
          .map((m) => (m.additional_kwargs.reasoning_details as unknown[] | undefined)?.length ?? 0),
        answer: ais.at(-1)?.text ?? "",
      };
      turns.push(turn);
      log(`> ${question}`);
      for (const r of turn.reasoning) log(`  (thinking) ${r}`);
      for (const c of turn.toolCalls) log(`  tool: ${c}`);
      log(`  reasoning_details kept on tool-call turns: ${turn.reasoningDetails.join(", ") || "none"}`);
      log(`< ${turn.answer}`);
    }
    return { turns, messages };
  } finally {
    await emulator?.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
