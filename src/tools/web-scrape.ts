/**
 * `web_scrape` (WebScrapeTool): reads one public web page as markdown (POST /augment/scrape). The text handed to
 * the model is capped (`maxChars`); when cut, a hint says how much is left and how to read on (`start`), and the
 * rest is served from a small per-tool cache (no second paid scrape). The full response is the artifact.
 * Loopback, private and non-http(s) URLs are refused before any request (./url-guard.ts).
 */
import { StructuredTool, type ToolRunnableConfig } from "@langchain/core/tools";
import { z } from "zod";
import type { ServiceClient } from "../client.js";
import { ValidationError } from "../http/errors.js";
import { webScrape, type WebScrapeResult } from "./api.js";
import { assertPublicHttpUrl } from "./url-guard.js";
import { balanceOf, clientOf, guard, ToolInputError, type ServiceToolConnection, type ToolResult } from "./shared.js";

export const DEFAULT_SCRAPE_MAX_CHARS = 8000;
const CACHE_PAGES = 8;
const CACHE_CHARS = 4 * 1024 * 1024;
const CACHE_TTL_MS = 10 * 60_000;

export interface WebScrapeToolOptions extends ServiceToolConnection {
  /** most characters of page text per call (default 8000) */
  maxChars?: number;
}

const schema = z.object({
  url: z.string().describe("the full http:// or https:// address of one public web page"),
  start: z.number().nullish().describe("character offset to read from, to continue a page that was cut (default 0)"),
});

export class WebScrapeTool extends StructuredTool<typeof schema> {
  static override lc_name() {
    return "WebScrapeTool";
  }
  name = "web_scrape";
  description: string;
  schema = schema;
  override responseFormat = "content_and_artifact" as const;
  readonly client: ServiceClient;
  readonly maxChars: number;
  /**
   * recently read pages (url -> response), so reading on after a cut costs nothing: at most CACHE_PAGES pages and
   * CACHE_CHARS characters in all, each for CACHE_TTL_MS (a later read of the URL gets the page as it is then)
   */
  private readonly pages = new Map<string, { page: WebScrapeResult; at: number }>();

  #cached(url: string): WebScrapeResult | undefined {
    const hit = this.pages.get(url);
    if (hit && Date.now() - hit.at < CACHE_TTL_MS) return hit.page;
    this.pages.delete(url);
    return undefined;
  }

  #keep(url: string, page: WebScrapeResult): void {
    if (page.content.length > CACHE_CHARS) return; // read on by scraping again rather than hold it
    this.pages.set(url, { page, at: Date.now() });
    let chars = 0;
    for (const { page: p } of this.pages.values()) chars += p.content.length;
    for (const [key, { page: p }] of this.pages) {
      if (this.pages.size <= CACHE_PAGES && chars <= CACHE_CHARS) break;
      this.pages.delete(key); // oldest first
      chars -= p.content.length;
    }
  }

  constructor(options: WebScrapeToolOptions = {}) {
    super(options.toolParams);
    this.client = clientOf(options);
    this.maxChars = options.maxChars ?? DEFAULT_SCRAPE_MAX_CHARS;
    if (!(Number.isInteger(this.maxChars) && this.maxChars >= 100)) throw new ValidationError("maxChars must be an integer >= 100");
    this.description =
      `Read one public web page (http or https) and get its text as markdown, at most ${this.maxChars} characters per call; ` +
      "a longer page says where it was cut, and `start` reads on. Local and private network addresses are refused.";
  }

  protected async _call(input: z.infer<typeof schema>, _run?: unknown, config?: ToolRunnableConfig): Promise<ToolResult> {
    return guard(async () => {
      const url = assertPublicHttpUrl(input.url).href; // before anything is sent
      const start = input.start ?? 0;
      if (!(Number.isInteger(start) && start >= 0)) throw new ToolInputError("INVALID_PARAMS", "start must be a whole number >= 0");
      let page = this.#cached(url);
      if (!page) {
        page = await webScrape(this.client, url, { signal: config?.signal });
        this.#keep(url, page);
      }
      const total = page.content.length;
      if (start > 0 && start >= total)
        throw new ToolInputError("INVALID_PARAMS", `start ${start} is past the end of the page (${total} characters)`);
      let end = Math.min(total, start + this.maxChars);
      // cut at a line or word boundary when one is near
      if (end < total) {
        const window = page.content.slice(start, end);
        const cut = Math.max(window.lastIndexOf("\n"), window.lastIndexOf(" "));
        if (cut > this.maxChars * 0.8) end = start + cut;
      }
      const text = page.content.slice(start, end);
      const out: Record<string, unknown> = {
        url: page.url,
        format: page.format,
        characters: total,
        ...(start ? { start } : {}),
        content: text,
      };
      if (end < total) {
        out.truncated = `cut at character ${end} of ${total}; call web_scrape again with start: ${end} to read on`;
      }
      return [JSON.stringify(out), { response: page.raw, shown: { start, end }, ...balanceOf(page.headers) }];
    });
  }
}
