/**
 * Typed reads of what `ChatService` puts in a message's `response_metadata`. LangChain types that record as
 * `unknown` per key, so `msg.response_metadata.web_search_citations` cannot be passed on under strict
 * type-checking; these return the documented shapes (checked at run time, never trusted blindly) and work on
 * an `AIMessage`, a merged `AIMessageChunk` or anything else carrying `response_metadata`.
 *
 *   mapCitations(msg.text, webSearchCitations(msg));
 *   costOf(msg)?.usd;
 */
import type { Document } from "@langchain/core/documents";
import type { ServiceResponseHeaders } from "../http/headers.js";
import type { ServiceCost } from "./chat-model.js";
import type { WebSearchCitation } from "./service-parameters.js";

/** Anything with LangChain's `response_metadata` (an `AIMessage`, an `AIMessageChunk`, a `ChatGeneration`'s message). */
export interface WithResponseMetadata {
  readonly response_metadata?: unknown;
}

function metadataOf(message: WithResponseMetadata | null | undefined): Record<string, unknown> {
  const meta = message?.response_metadata;
  return meta && typeof meta === "object" ? (meta as Record<string, unknown>) : {};
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The web-search citations of a response (`response_metadata.web_search_citations`); `[]` when there are none. */
export function webSearchCitations(message: WithResponseMetadata | null | undefined): WebSearchCitation[] {
  const list = metadataOf(message).web_search_citations;
  if (!Array.isArray(list)) return [];
  return list.filter((c): c is WebSearchCitation => isRecord(c) && typeof c.url === "string");
}

/**
 * The search results surfaced as documents (`response_metadata.web_search_documents`, with
 * `returnSearchResultsAsDocuments`); `[]` when there are none.
 */
export function webSearchDocuments(message: WithResponseMetadata | null | undefined): Document[] {
  const list = metadataOf(message).web_search_documents;
  if (!Array.isArray(list)) return [];
  return list.filter((d): d is Document => isRecord(d) && typeof d.pageContent === "string");
}

/** What the request cost (`response_metadata.cost`: `{ usd, diem }`), or undefined when the service did not say. */
export function costOf(message: WithResponseMetadata | null | undefined): ServiceCost | undefined {
  const cost = metadataOf(message).cost;
  if (!isRecord(cost) || typeof cost.usd !== "number" || typeof cost.diem !== "number") return undefined;
  return { usd: cost.usd, diem: cost.diem };
}

/** The parsed response headers (`response_metadata.headers`: rate limits, balances, model, deprecation, request id). */
export function responseHeadersOf(message: WithResponseMetadata | null | undefined): ServiceResponseHeaders | undefined {
  const headers = metadataOf(message).headers;
  return isRecord(headers) ? (headers as ServiceResponseHeaders) : undefined;
}
