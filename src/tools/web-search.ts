/**
 * `web_search` (WebSearchTool): the service's web search (POST /augment/search). The model reads compact JSON
 * (title, url, date, a snippet per result); the raw response rides along as the ToolMessage artifact.
 */
import { StructuredTool, type ToolRunnableConfig } from "@langchain/core/tools";
import { z } from "zod";
import type { ServiceClient } from "../client.js";
import { ValidationError } from "../http/errors.js";
import { WEB_SEARCH_PROVIDERS, webSearch, type WebSearchProvider } from "./api.js";
import { balanceOf, clientOf, guard, type ServiceToolConnection, type ToolResult } from "./shared.js";

export interface WebSearchToolOptions extends ServiceToolConnection {
  /** provider when the model names none (default: the service's, `brave`) */
  provider?: WebSearchProvider;
  /** results when the model asks for no number (default 5) */
  defaultLimit?: number;
  /** longest snippet per result handed to the model, in characters (default 300) */
  maxSnippetChars?: number;
}

const schema = z.object({
  query: z.string().describe("what to search the web for (1-400 characters)"),
  limit: z.number().nullish().describe("how many results, 1-20 (default 5)"),
  provider: z
    .enum(WEB_SEARCH_PROVIDERS)
    .nullish()
    .describe('search provider: "brave" (default, no data retention) or "google" (anonymized)'),
});

const MAX_TITLE_CHARS = 200;
/** the longest URL web_scrape accepts */
const MAX_URL_CHARS = 2048;

function snippet(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).replace(/\s+\S*$/, "")}…`;
}

export class WebSearchTool extends StructuredTool<typeof schema> {
  static override lc_name() {
    return "WebSearchTool";
  }
  name = "web_search";
  description =
    "Search the web. Returns up to `limit` results, each with title, url, date and a short snippet. Use web_scrape on a result's url to read the whole page.";
  schema = schema;
  override responseFormat = "content_and_artifact" as const;
  readonly client: ServiceClient;
  private readonly provider?: WebSearchProvider;
  private readonly defaultLimit: number;
  private readonly maxSnippetChars: number;

  constructor(options: WebSearchToolOptions = {}) {
    super(options.toolParams);
    this.client = clientOf(options);
    if (options.provider !== undefined && !WEB_SEARCH_PROVIDERS.includes(options.provider))
      throw new ValidationError(`provider must be one of ${WEB_SEARCH_PROVIDERS.join(", ")}`);
    this.provider = options.provider;
    this.defaultLimit = options.defaultLimit ?? 5;
    this.maxSnippetChars = options.maxSnippetChars ?? 300;
    if (!(Number.isInteger(this.defaultLimit) && this.defaultLimit >= 1 && this.defaultLimit <= 20))
      throw new ValidationError("defaultLimit must be an integer 1-20");
    if (!(Number.isInteger(this.maxSnippetChars) && this.maxSnippetChars >= 20))
      throw new ValidationError("maxSnippetChars must be an integer >= 20");
  }

  protected async _call(input: z.infer<typeof schema>, _run?: unknown, config?: ToolRunnableConfig): Promise<ToolResult> {
    return guard(async () => {
      const limit = input.limit ?? this.defaultLimit;
      const res = await webSearch(
        this.client,
        { query: input.query, limit, provider: input.provider ?? this.provider },
        { signal: config?.signal },
      );
      // the model reads at most `limit` results, each field bounded, whatever the service sent (the artifact keeps it all)
      const results = res.results.slice(0, limit).map((r, i) => ({
        n: i + 1,
        title: snippet(r.title, MAX_TITLE_CHARS),
        url: r.url.length <= MAX_URL_CHARS ? r.url : `${r.url.slice(0, MAX_URL_CHARS - 1)}…`,
        ...(r.date ? { date: snippet(r.date, 40) } : {}),
        snippet: snippet(r.content, this.maxSnippetChars),
      }));
      const content = results.length
        ? { query: res.query, results }
        : { query: res.query, results: [], note: "no results; try other words" };
      return [JSON.stringify(content), { response: res.raw, ...balanceOf(res.headers) }];
    });
  }
}
