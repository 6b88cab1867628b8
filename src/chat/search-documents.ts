/**
 * The search-documents tool call (`returnSearchResultsAsDocuments`). The service adds it to an answer to hand
 * over its web search results; it is not a tool for the agent to run ("Do not execute it").
 *
 * - live: `{id: "web_search_call", type: "function", function: {name: "web_search", arguments:
 *   "{\"documents\":[{id,title,url,snippet,published_at}]}"}}`, with `finish_reason: "tool_calls"`; streamed as a
 *   `delta.tool_calls` chunk before the content.
 * - seed: named `<brand>_web_search_documents`, arguments `{"documents": [...citations]}`.
 *
 * `web_search` is also the name of this package's `WebSearchTool`, which a model may really call: a call by that
 * name is the synthetic one only when its id is `web_search_call` or its arguments carry `documents`.
 */

/** the live synthetic call's id */
export const SEARCH_DOCUMENTS_CALL_ID = "web_search_call";
/** the live synthetic call's function name (shared with real `web_search` tools) */
export const SEARCH_DOCUMENTS_CALL_NAME = "web_search";

/** What is known of one tool call (or of its first stream delta). */
export interface ToolCallShape {
  id?: string;
  function?: { name?: string; arguments?: string };
}

/**
 * Whether a complete tool call is the search-documents call: by the live id, by the seed's name, or by the name
 * `web_search` with `documents` in its arguments. `seedName`: the brand's `<brand>_web_search_documents`.
 */
export function isSearchDocumentsCall(call: ToolCallShape, seedName: string): boolean {
  if (call.id === SEARCH_DOCUMENTS_CALL_ID) return true;
  const name = call.function?.name;
  if (name === seedName) return true;
  return name === SEARCH_DOCUMENTS_CALL_NAME && classifyArguments(call.function?.arguments ?? "") === "documents";
}

/**
 * The first delta of a streamed tool call, classified: `"documents"` (id or seed name), `"tool"` (any other
 * call), or `"undecided"`: named `web_search` with another id, so only its complete arguments tell.
 */
export function classifyCallStart(call: ToolCallShape, seedName: string): "documents" | "tool" | "undecided" {
  if (call.id === SEARCH_DOCUMENTS_CALL_ID || call.function?.name === seedName) return "documents";
  return call.function?.name === SEARCH_DOCUMENTS_CALL_NAME ? "undecided" : "tool";
}

/**
 * For an undecided `web_search` call whose arguments are still arriving: `"documents"` or `"tool"` once they
 * parse as JSON, `"undecided"` while they do not.
 */
export function classifyArguments(args: string): "documents" | "tool" | "undecided" {
  try {
    const parsed: unknown = JSON.parse(args);
    return typeof parsed === "object" && parsed !== null && Array.isArray((parsed as { documents?: unknown }).documents)
      ? "documents"
      : "tool";
  } catch {
    return "undecided";
  }
}

/** A wire tool call or stream delta of one (the members this file reads and rebuilds). */
export interface ToolCallDelta extends ToolCallShape {
  index?: number;
  type?: string;
}

/**
 * Takes the search-documents call(s) out of a JSON answer's `tool_calls` (in place; the member is dropped when
 * nothing else is left) and returns their arguments; undefined when there was none.
 */
export function takeSearchDocumentsCalls(message: { tool_calls?: ToolCallDelta[] | null }, seedName: string): string[] | undefined {
  const calls = message.tool_calls;
  if (!Array.isArray(calls)) return undefined;
  const hits = calls.filter((c) => isSearchDocumentsCall(c, seedName));
  if (hits.length === 0) return undefined;
  const rest = calls.filter((c) => !hits.includes(c));
  message.tool_calls = rest.length ? rest : undefined;
  return hits.map((c) => c.function?.arguments ?? "");
}

/** `tool_calls` only because of the search-documents call is a plain `stop` (there is nothing for the caller to run). */
export function finishReasonWithoutDocuments(
  reason: string | null | undefined,
  documentsFound: boolean,
  otherCalls: boolean,
): string | undefined {
  if (reason === null || reason === undefined) return undefined;
  return reason === "tool_calls" && documentsFound && !otherCalls ? "stop" : reason;
}

type CallState =
  | { kind: "documents"; args: string }
  | { kind: "tool" }
  | { kind: "undecided"; call: ToolCallDelta & { function: { name?: string; arguments: string } }; triedAt: number };

/**
 * Splits one choice's streamed tool-call deltas into the search-documents call (kept here) and the calls to
 * pass on. A call named `web_search` under another id is held back until its arguments parse: then it is
 * passed on whole (one delta) if they hold no `documents`, or kept here if they do.
 */
export class SearchDocumentsFilter {
  readonly #seedName: string;
  readonly #calls = new Map<number, CallState>();
  /** a call other than the search-documents one was passed on */
  otherCalls = false;

  constructor(seedName: string) {
    this.#seedName = seedName;
  }

  /** whether a search-documents call was seen */
  get found(): boolean {
    for (const state of this.#calls.values()) if (state.kind === "documents") return true;
    return false;
  }

  /** the arguments of each search-documents call */
  get documentsArguments(): string[] {
    const out: string[] = [];
    for (const state of this.#calls.values()) if (state.kind === "documents") out.push(state.args);
    return out;
  }

  /** The deltas of one stream event: returns those to pass on (undefined when none). */
  push(deltas: readonly ToolCallDelta[]): ToolCallDelta[] | undefined {
    const out: ToolCallDelta[] = [];
    for (const delta of deltas) {
      const index = delta.index ?? 0;
      const args = delta.function?.arguments ?? "";
      let state = this.#calls.get(index);
      // an id starts a new call at this index (a delta without one continues the call there)
      if (!state || (delta.id !== undefined && delta.id !== null)) {
        const kind = classifyCallStart(delta, this.#seedName);
        state =
          kind === "documents"
            ? { kind, args: "" }
            : kind === "undecided"
              ? { kind, call: { ...delta, index, function: { ...delta.function, arguments: "" } }, triedAt: 0 }
              : { kind: "tool" };
        this.#calls.set(index, state);
      }
      if (state.kind === "documents") state.args += args;
      else if (state.kind === "tool") {
        this.otherCalls = true;
        out.push(delta);
      } else {
        state.call.function.arguments += args;
        // parsed again only once the arguments doubled since the last try (and at the end, in flush): arguments cut
        // into many small deltas cost linear time, not a parse of the whole text per delta
        if (state.call.function.arguments.length < 2 * state.triedAt) continue;
        state.triedAt = state.call.function.arguments.length;
        const decided = classifyArguments(state.call.function.arguments);
        if (decided === "documents") this.#calls.set(index, { kind: "documents", args: state.call.function.arguments });
        else if (decided === "tool") {
          this.#calls.set(index, { kind: "tool" });
          this.otherCalls = true;
          out.push(state.call);
        }
      }
    }
    return out.length ? out : undefined;
  }

  /** At the end of the stream: a `web_search` call whose arguments never parsed as the documents is passed on as it came. */
  flush(): ToolCallDelta[] | undefined {
    const out: ToolCallDelta[] = [];
    for (const [index, state] of this.#calls) {
      if (state.kind !== "undecided") continue;
      // the arguments as they ended (the last deltas may not have been tried)
      if (classifyArguments(state.call.function.arguments) === "documents") {
        this.#calls.set(index, { kind: "documents", args: state.call.function.arguments });
        continue;
      }
      this.#calls.set(index, { kind: "tool" });
      this.otherCalls = true;
      out.push(state.call);
    }
    return out.length ? out : undefined;
  }
}
