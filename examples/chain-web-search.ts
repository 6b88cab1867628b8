/**
 * A chain, prompt | ChatService | parser, with web search and citations turned on through `serviceParameters`.
 * The model cites its sources inline as `[REF]n[/REF]`; the parser turns them into `[n]` and prints the
 * sources as footnotes.
 *
 *   npm run example:chain-web-search                      # against the embedded emulator
 *   SERVICE_BASE_URL=https://.../api/v1 SERVICE_API_KEY=... SERVICE_MODEL=... npm run example:chain-web-search
 */
import { pathToFileURL } from "node:url";
import { ChatPromptTemplate } from "@langchain/core/prompts";
import { RunnableLambda } from "@langchain/core/runnables";
import type { AIMessage } from "@langchain/core/messages";
import { ChatService, mapCitations, type WebSearchCitation } from "../src/index.js";
import { startEmulator } from "langchain-service-emulator";

export interface Options {
  baseUrl?: string;
  apiKey?: string;
  log?: (line: string) => void;
}

export interface Result {
  question: string;
  /** the answer with `[n]` footnote markers */
  answer: string;
  /** one line per cited source: `[n] title - url` */
  footnotes: string[];
  citations: WebSearchCitation[];
  /** what the request cost (web search is billed on top of tokens), in USD and the staking-token unit */
  cost: { usd: number; diem: number } | undefined;
}

/** Parser: AIMessage -> answer text with footnote markers + the footnotes. */
export const footnoteParser = RunnableLambda.from((message: AIMessage) => {
  const citations = (message.response_metadata.web_search_citations ?? []) as WebSearchCitation[];
  const { text, cited } = mapCitations(message.text, citations);
  // keep the service's numbering, so `[2]` in the text is footnote 2
  const footnotes = cited.map((c) => `[${citations.indexOf(c) + 1}] ${c.title} - ${c.url}`);
  const cost = message.response_metadata.cost as { usd: number; diem: number } | undefined;
  return { answer: text, footnotes, citations, cost };
});

export async function main(options: Options = {}): Promise<Result> {
  const log = options.log ?? console.log;
  let baseUrl = options.baseUrl ?? process.env.SERVICE_BASE_URL;
  let apiKey = options.apiKey ?? process.env.SERVICE_API_KEY;
  // no deployment given: run against the local emulator (no network, no account)
  const emulator = baseUrl ? undefined : await startEmulator({ apiKeys: [{ key: "example-key", usd: 5 }] });
  if (emulator) [baseUrl, apiKey] = [emulator.url, "example-key"];
  try {
    const model = new ChatService({
      model: process.env.SERVICE_MODEL ?? "emu-s",
      baseUrl,
      apiKey,
      serviceParameters: { enableWebSearch: "on", enableWebCitations: true },
    });
    const prompt = ChatPromptTemplate.fromMessages([
      ["system", "Answer in two sentences and cite your sources."],
      ["human", "{question}"],
    ]);
    const chain = prompt.pipe(model).pipe(footnoteParser);

    const question = "What is the chain id of Base, and how many decimals does USDC have?";
    const result = await chain.invoke({ question });
    log(`Q: ${question}`);
    log(`A: ${result.answer}`);
    log("");
    for (const line of result.footnotes) log(line);
    if (result.cost) log(`\n(cost: $${result.cost.usd.toFixed(4)} + ${result.cost.diem.toFixed(4)} DIEM)`);
    return { question, ...result };
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
