/**
 * Citations on a stream. The live service puts `web_search_citations` in a stream only when the request asks for
 * them with `include_search_results_in_stream` (a `choices: []` chunk at its end); `enable_web_citations` alone
 * gives a streamed answer `^n^` markers that point nowhere. So a stream with web search on (`on` or `auto`) and
 * citations asked for asks for the results too, unless the caller set the flag (body or model suffix), and the
 * merged stream carries the same citations and `citation` annotations as `invoke()`.
 */
import { parseModelId } from "./model-id.js";

/** Sets `include_search_results_in_stream` on a stream's body where citations would otherwise be lost. */
export function askStreamSearchResults(body: Record<string, unknown>, paramsKey: string, brand: string): void {
  const raw = body[paramsKey];
  const params = raw && typeof raw === "object" && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  // the suffix overrides the body's members, as the service applies it
  const suffix = typeof body.model === "string" ? parseModelId(body.model, brand).serviceParameters : {};
  if (suffix.includeSearchResultsInStream !== undefined || params.include_search_results_in_stream !== undefined) return;
  const search = suffix.enableWebSearch ?? params.enable_web_search;
  const citations = suffix.enableWebCitations ?? params.enable_web_citations;
  if ((search === "on" || search === "auto") && citations === true) {
    body[paramsKey] = { ...params, include_search_results_in_stream: true };
  }
}
