/**
 * POST /augment/search and POST /augment/scrape over the emulator's local web (../models/corpus.ts, the corpus
 * chat's web search reads). Search ranks documents by word overlap; scrape serves a corpus page by its URL as
 * markdown and refuses any other URL with a 400 that lists what the local web holds. Both are billed per call
 * from the same ledger as chat (402s and `X-Balance-Remaining` come from the server's pipeline). The published
 * request schemas are open (no `additionalProperties: false`), so unknown members are ignored.
 */
import { z } from "zod";
import { WEB_CORPUS, searchCorpus, type WebDocument } from "../models/corpus.js";
import { EmulatorHttpError, type Caller, type EmulatorContext, type EmulatorRequest, type RouteSpec } from "../types.js";
import { badRequest, parseBody, requestId } from "./strict-body.js";

/** USD per call (the published price is dynamic, from $0.001) */
export const SEARCH_PRICE_USD = 0.004;
export const SCRAPE_PRICE_USD = 0.008;

const searchSchema = z.object({
  query: z.string().min(1).max(400),
  limit: z.number().int().min(1).max(20).optional(),
  search_provider: z.enum(["google", "brave"]).optional(),
});

const scrapeSchema = z.object({
  url: z.string().refine((u) => {
    try {
      new URL(u);
      return true;
    } catch {
      return false;
    }
  }, "Invalid url"),
});

/** Sites the live service rejects at once (its description names X/Twitter and Reddit). */
const BLOCKED_HOSTS = /(^|\.)(x\.com|twitter\.com|reddit\.com)$/i;

function charge(caller: Caller, ctx: EmulatorContext, usd: number, kind: string): void {
  if (caller.kind !== "anonymous") ctx.ledger.charge(caller.account, usd, { kind, requestId: requestId(kind) });
}

/** A corpus page as the scraper renders it: markdown with the title, the date and the text. */
export function pageMarkdown(doc: WebDocument): string {
  return `# ${doc.title}\n\n_Published ${doc.date}_\n\n${doc.content}\n\nSource: ${doc.url}\n`;
}

function normalize(url: string): string {
  const u = new URL(url);
  u.hash = "";
  return u.href.replace(/\/$/, "");
}

export const augmentRoutes = {
  search: {
    auth: "required",
    inference: true,
    resolveModel(req) {
      parseBody(req, searchSchema);
      return { bucket: "default" };
    },
    handler(req: EmulatorRequest, ctx, caller) {
      const body = parseBody(req, searchSchema);
      const docs = searchCorpus(body.query, body.limit ?? 10);
      charge(caller, ctx, SEARCH_PRICE_USD, "web-search");
      return {
        status: 200,
        body: { query: body.query, results: docs.map((d) => ({ title: d.title, url: d.url, content: d.content, date: d.date })) },
      };
    },
  },
  scrape: {
    auth: "required",
    inference: true,
    resolveModel(req) {
      parseBody(req, scrapeSchema);
      return { bucket: "default" };
    },
    handler(req, ctx, caller) {
      const { url } = parseBody(req, scrapeSchema);
      const parsed = new URL(url);
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
        throw badRequest("Invalid request", { _errors: [], url: { _errors: ["Only http and https URLs can be scraped"] } });
      }
      if (BLOCKED_HOSTS.test(parsed.hostname)) {
        throw new EmulatorHttpError(403, { error: `${parsed.hostname} blocks automated access and cannot be scraped` });
      }
      const doc = WEB_CORPUS.find((d) => normalize(d.url) === normalize(url));
      if (!doc) {
        throw badRequest(`Could not scrape ${url}: the emulator's offline web holds only its local corpus`, {
          _errors: [],
          url: { _errors: [`Not in the local corpus; pages: ${WEB_CORPUS.map((d) => d.url).join(", ")}`] },
        });
      }
      charge(caller, ctx, SCRAPE_PRICE_USD, "web-scrape");
      return { status: 200, body: { url: doc.url, content: pageMarkdown(doc), format: "markdown" } };
    },
  },
} satisfies Record<string, RouteSpec>;
