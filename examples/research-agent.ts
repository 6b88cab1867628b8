/**
 * A research agent with an API key: langchain's `createAgent` with `ChatService` and the web tools
 * (`web_search`, `web_scrape`), all through one fetch stack. It searches, picks the top result, reads that page
 * (capped, with a hint when cut) and answers from it.
 *
 * Against the embedded emulator the web is its small local corpus (the one chat's web search reads), and the
 * deterministic model reads only the user's words, so the research runs as two turns: "search", then "read this
 * url" with the url the search found.
 *
 *   npm run example:research-agent
 *   SERVICE_BASE_URL=https://.../api/v1 SERVICE_API_KEY=... SERVICE_MODEL=... TOPIC="..." npm run example:research-agent
 */
import { pathToFileURL } from "node:url";
import { createAgent } from "langchain";
import { HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { ChatService, ServiceClient } from "../src/index.js";
import { WebScrapeTool, WebSearchTool } from "../src/tools/index.js";
import { startEmulator } from "langchain-service-emulator";

export interface Options {
  baseUrl?: string;
  apiKey?: string;
  topic?: string;
  log?: (line: string) => void;
}

export interface Result {
  topic: string;
  /** the search results the model read */
  results: { title: string; url: string }[];
  /** the page it read, as the tool handed it over */
  page?: { url: string; content: string; truncated?: string };
  answer: string;
  messages: BaseMessage[];
}

export async function main(options: Options = {}): Promise<Result> {
  const log = options.log ?? console.log;
  let baseUrl = options.baseUrl ?? process.env.SERVICE_BASE_URL;
  let apiKey = options.apiKey ?? process.env.SERVICE_API_KEY;
  const emulator = baseUrl ? undefined : await startEmulator({ apiKeys: [{ key: "example-key", usd: 5 }] });
  if (emulator) [baseUrl, apiKey] = [emulator.url, "example-key"];
  try {
    const topic = options.topic ?? process.env.TOPIC ?? "x402 payment protocol";
    // one stack for the model and the tools: one key, one pacing, one abuse guard
    const client = new ServiceClient({ baseUrl, apiKey });
    const search = new WebSearchTool({ client, defaultLimit: 3 });
    const scrape = new WebScrapeTool({ client, maxChars: 2000 });
    const model = new ChatService({ model: process.env.SERVICE_MODEL ?? "emu-m", serviceFetch: client.fetch });
    const agent = createAgent({
      model,
      tools: [search, scrape],
      systemPrompt: "You research topics on the web: search first, then read the best page, and answer from what you read.",
    });

    const ask = `Use web_search to find "${topic}".`;
    log(`> ${ask}`);
    let { messages } = await agent.invoke({ messages: [new HumanMessage(ask)] });
    const searched = messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m) && m.name === "web_search").at(-1);
    const found = searched ? (JSON.parse(searched.text) as { results?: { title: string; url: string }[] }) : {};
    const results = (found.results ?? []).map(({ title, url }) => ({ title, url }));
    for (const r of results) log(`  web_search -> ${r.title} <${r.url}>`);
    if (results.length === 0) return { topic, results, answer: messages.at(-1)!.text, messages };

    const read = `Now read the page at url: "${results[0]!.url}" and tell me what it says.`;
    log(`> ${read}`);
    ({ messages } = await agent.invoke({ messages: [...messages, new HumanMessage(read)] }));
    const scraped = messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m) && m.name === "web_scrape").at(-1);
    const page = scraped ? (JSON.parse(scraped.text) as Result["page"]) : undefined;
    if (page) log(`  web_scrape -> ${page.url}: ${page.content.split("\n")[0]}${page.truncated ? ` (${page.truncated})` : ""}`);
    const answer = messages.at(-1)!.text;
    log(`< ${answer}`);
    return { topic, results, page, answer, messages };
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
