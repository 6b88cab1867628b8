/**
 * The emulator's "web": a few short local documents that web search picks from by word overlap, so answers,
 * citations and their markers (`^n^` live, `[REF]n[/REF]` seed) are deterministic and need no network.
 */
import type { CitationMarkers } from "./chat-behaviour.js";

export interface WebDocument {
  title: string;
  url: string;
  content: string;
  date: string;
}

export const WEB_CORPUS: readonly WebDocument[] = [
  {
    title: "Ethereum overview",
    url: "https://example.org/ethereum",
    content:
      "Ethereum is a proof-of-stake blockchain with smart contracts. Its native currency is ether (ETH) and blocks are produced about every 12 seconds.",
    date: "2025-01-15",
  },
  {
    title: "Solana network basics",
    url: "https://example.org/solana",
    content:
      "Solana is a high-throughput blockchain whose native token is SOL. Slots last about 400 milliseconds and fees are paid in lamports.",
    date: "2025-02-03",
  },
  {
    title: "USDC stablecoin",
    url: "https://example.org/usdc",
    content:
      "USDC is a dollar-backed stablecoin with 6 decimals, issued on Base, Ethereum and Solana. Transfers can be authorized off-chain with EIP-3009 signatures.",
    date: "2025-03-10",
  },
  {
    title: "The x402 payment protocol",
    url: "https://example.org/x402",
    content:
      "x402 revives HTTP status 402 Payment Required: a server answers with payment requirements, the client signs a USDC payment and retries with a payment header.",
    date: "2025-04-22",
  },
  {
    title: "Base layer 2",
    url: "https://example.org/base",
    content: "Base is an Ethereum layer 2 rollup with chain id 8453. The latest upgrades lowered fees for payments and agents.",
    date: "2025-05-30",
  },
  {
    title: "LangChain.js agents",
    url: "https://example.org/langchain",
    content:
      "LangChain.js composes chat models, tools and retrievers; LangGraph runs agents that call tools in a loop until the task is done.",
    date: "2025-06-12",
  },
  {
    title: "API rate limits explained",
    url: "https://example.org/rate-limits",
    content:
      "Rate limits cap requests and tokens per minute by model tier. A 429 response carries x-ratelimit-reset-requests; clients should wait until that time.",
    date: "2025-07-01",
  },
  {
    title: "Weather in Paris today",
    url: "https://example.org/paris-weather",
    content: "Paris weather news: mild and cloudy with a high of 18 degrees Celsius and light wind from the west.",
    date: "2025-08-08",
  },
];

const STOP_WORDS = new Set(
  "the a an and or of to in on for is are was what who how why when which with about tell me please latest news search find give show does do can you your it its this that be by from at as".split(
    " ",
  ),
);

/** Lowercase content words of at least 3 characters (plural "s" dropped), for overlap scoring. */
export function contentWords(text: string): Set<string> {
  const words = new Set<string>();
  for (const raw of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (raw.length < 3 || STOP_WORDS.has(raw)) continue;
    words.add(raw.length > 3 && raw.endsWith("s") ? raw.slice(0, -1) : raw);
  }
  return words;
}

/** Documents with the most word overlap with `query` (title words count double); at most `limit`, none if no overlap. */
export function searchCorpus(query: string, limit = 3, corpus: readonly WebDocument[] = WEB_CORPUS): WebDocument[] {
  const q = contentWords(query);
  const scored = corpus.map((doc, order) => {
    let score = 0;
    for (const w of contentWords(doc.title)) if (q.has(w)) score += 2;
    for (const w of contentWords(doc.content)) if (q.has(w)) score += 1;
    return { doc, score, order };
  });
  return scored
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, limit)
    .map((s) => s.doc);
}

/** `auto` web search: does the question look like it needs fresh facts? */
export function looksLikeItNeedsSearch(question: string): boolean {
  return /\?|\b(latest|news|search|current|today|recent|who is|what is)\b/i.test(question);
}

function firstSentence(text: string): string {
  const m = /^.*?[.!?](\s|$)/.exec(text);
  return (m ? m[0] : text).trim();
}

/** A citation marker for the 1-based citation `n`: `^n^` (live) or `[REF]n[/REF]` (seed). */
export function citationMarker(n: number, markers: CitationMarkers): string {
  return markers === "caret" ? `^${n}^` : `[REF]${n}[/REF]`;
}

/**
 * The answer text built from search results: one sentence per document, each followed by its citation marker
 * (1-based index into the citations) when citations were asked for (`markers` given).
 */
export function answerFromDocuments(question: string, docs: readonly WebDocument[], markers?: CitationMarkers): string {
  if (docs.length === 0) return `I searched the web for "${question}" but found no results.`;
  const parts = docs.map((doc, i) => `${firstSentence(doc.content)}${markers ? citationMarker(i + 1, markers) : ""}`);
  return `Search results for "${question}": ${parts.join(" ")}`;
}

/** The live search-documents payload: `{documents: [{id, title, url, snippet, published_at}]}`. */
export function liveSearchDocuments(docs: readonly WebDocument[]): { documents: Record<string, string>[] } {
  return {
    documents: docs.map((doc, i) => ({ id: String(i + 1), title: doc.title, url: doc.url, snippet: doc.content, published_at: doc.date })),
  };
}
