/**
 * A completion plan (./engine.ts) on the wire: the JSON `chat.completion`, or the SSE stream of
 * `chat.completion.chunk`s with its in-band errors. Live and seed differ in where the search-documents call and
 * the search results go (./chat-behaviour.ts).
 */
import { createHash } from "node:crypto";
import type { BrandNames } from "langchain-service";
import { inBandErrorEvent, type ChatBehaviour } from "./chat-behaviour.js";
import type { CompletionPlan, PlannedChoice, WireToolCall } from "./plan.js";
import type { Usage } from "./usage.js";
import { tokenize } from "./tokenizer.js";

/** Deterministic log probabilities: a hash of (token, position) mapped to (-3, 0). */
export function tokenLogprob(token: string, position: number, top: number) {
  const h = createHash("sha256").update(`${position}\u0000${token}`).digest();
  const logprob = -((h.readUInt16BE(0) % 3000) + 1) / 1000;
  const bytes = [...Buffer.from(token, "utf8")];
  const top_logprobs = Array.from({ length: top }, (_, j) =>
    j === 0
      ? { token, logprob, bytes }
      : { token: `${token}~${j}`, logprob: logprob - j, bytes: [...Buffer.from(`${token}~${j}`, "utf8")] },
  );
  return { token, logprob, bytes, top_logprobs };
}

function logprobsFor(tokens: string[], start: number, top: number) {
  return { content: tokens.map((t, i) => tokenLogprob(t, start + i, top)) };
}

export interface RenderOptions {
  id: string;
  created: number;
  usage: Usage;
  cost: { usd: number; diem: number };
  names: BrandNames;
  logprobs: boolean;
  topLogprobs: number;
  behaviour: ChatBehaviour;
  /** called once, as a stream fails in-band (the route refunds the request there) */
  onFailure?: () => void;
  /** the in-band error a failing plan ends with, when a fault names it (else the plan's kind) */
  failureEvent?: unknown;
}

function stopReason(finish: PlannedChoice["finishReason"]): "stop" | "length" | null {
  return finish === "stop" || finish === "length" ? finish : null;
}

/** A choice's tool calls as sent: the live search-documents call first, the seed's last. */
function wireToolCalls(c: PlannedChoice, behaviour: ChatBehaviour): WireToolCall[] | undefined {
  const calls = c.toolCalls ?? [];
  if (!c.documentsCall) return calls.length ? calls : undefined;
  return behaviour.liveSearchDocuments ? [c.documentsCall, ...calls] : [...calls, c.documentsCall];
}

export function renderCompletion(plan: CompletionPlan, o: RenderOptions): Record<string, unknown> {
  return {
    id: o.id,
    object: "chat.completion",
    created: o.created,
    model: plan.model.id,
    choices: plan.choices.map((c) => {
      const tokens = c.content ? [...c.content.tokens()] : [];
      const toolCalls = wireToolCalls(c, o.behaviour);
      return {
        index: c.index,
        message: {
          role: "assistant",
          content: c.content ? tokens.join("") : null,
          ...(c.reasoningContent !== undefined && !c.reasoningContentStripped ? { reasoning_content: c.reasoningContent } : {}),
          ...(c.reasoningDetails ? { reasoning_details: c.reasoningDetails } : {}),
          ...(c.thoughtSignature ? { thought_signature: c.thoughtSignature } : {}),
          ...(toolCalls ? { tool_calls: toolCalls } : {}),
        },
        logprobs: o.logprobs ? logprobsFor(tokens, 0, o.topLogprobs) : null,
        finish_reason: c.finishReason,
        stop_reason: stopReason(c.finishReason),
      };
    }),
    usage: o.usage,
    cost: o.cost,
    prompt_logprobs: null,
    [o.names.parameters]: { ...plan.echo, ...(plan.webSearched ? { web_search_citations: plan.citations } : {}) },
  };
}

/** Splits text into pieces of a few tokens (for streamed reasoning). */
function pieces(text: string, size = 3): string[] {
  const tokens = tokenize(text);
  const out: string[] = [];
  for (let i = 0; i < tokens.length; i += size) out.push(tokens.slice(i, i + size).join(""));
  return out;
}

const sse = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;
const DONE = "data: [DONE]\n\n";

/**
 * A stream that fails before any content: the role chunk, the in-band error `event`, then `[DONE]` (as the live
 * service ends every in-band error).
 */
export async function* failedStream(o: { id: string; created: number; model: string; event: unknown }): AsyncGenerator<string> {
  yield sse({
    id: o.id,
    object: "chat.completion.chunk",
    created: o.created,
    model: o.model,
    choices: [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }],
  });
  yield sse(o.event);
  yield DONE;
}

/** A stream the overloaded model refuses before any content: `model_overloaded` with `retry_after`. */
export function overloadedStream(o: { id: string; created: number; model: string; retryAfterSeconds: number }): AsyncGenerator<string> {
  return failedStream({ ...o, event: inBandErrorEvent("model_overloaded", o.retryAfterSeconds) });
}

/**
 * The SSE stream: role chunk, (live) the search-documents call, reasoning deltas, content deltas (a few tokens
 * each; bigger pieces for very long answers), tool-call deltas with `index` ((seed) the search-documents call
 * last), a finish chunk per choice, then one `choices: []` chunk with usage, cost and the parameters echo, then
 * `[DONE]`. Search results (`web_search_citations`), at most once per stream: live, only with
 * `include_search_results_in_stream`, in a `choices: []` chunk just before `[DONE]`; seed, in the usage chunk,
 * or in a first `choices: []` chunk with the flag. A failing plan ends after the first content chunk with its
 * in-band error, then `[DONE]`.
 */
export async function* streamCompletion(plan: CompletionPlan, o: RenderOptions): AsyncGenerator<string> {
  const base = { id: o.id, object: "chat.completion.chunk", created: o.created, model: plan.model.id };
  const chunk = (index: number, delta: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    sse({ ...base, choices: [{ index, delta, logprobs: null, finish_reason: null, ...extra }] });
  const asked = plan.webSearched && plan.echo.include_search_results_in_stream === true;
  const live = o.behaviour.liveStreamSearchResults;
  const searchResults = () => sse({ ...base, choices: [], [o.names.parameters]: { ...plan.echo, web_search_citations: plan.citations } });
  const fail = function* () {
    o.onFailure?.();
    yield sse(o.failureEvent ?? inBandErrorEvent(plan.failure!, o.behaviour.overloadedRetryAfterSeconds));
    yield DONE;
  };

  if (asked && !live) yield searchResults();

  for (const c of plan.choices) {
    yield chunk(c.index, { role: "assistant", content: "" });
    const liveDocuments = c.documentsCall && o.behaviour.liveSearchDocuments;
    if (liveDocuments) yield chunk(c.index, { tool_calls: [{ index: 0, ...c.documentsCall }] });

    if (c.reasoningContent !== undefined) {
      const parts = pieces(c.reasoningContent);
      for (let i = 0; i < parts.length; i++) {
        const delta: Record<string, unknown> = c.reasoningContentStripped ? {} : { reasoning_content: parts[i] };
        if (c.reasoningDetails) {
          // first piece of index 0 carries type and format; later ones only index + text (they concatenate)
          delta.reasoning_details = [
            i === 0
              ? { type: "reasoning.text", text: parts[i], format: "emu-v1", index: 0 }
              : { type: "reasoning.text", text: parts[i], index: 0 },
          ];
        }
        if (delta.reasoning_content !== undefined || delta.reasoning_details !== undefined) yield chunk(c.index, delta);
      }
      const signed = c.reasoningDetails?.find((d) => d.type === "reasoning.encrypted");
      if (signed) yield chunk(c.index, { reasoning_details: [signed] });
      // the stream has no published shape for it: the message member, whole, in one delta
      if (c.thoughtSignature) yield chunk(c.index, { thought_signature: c.thoughtSignature });
    }

    if (c.content && c.content.count > 0) {
      const size = c.content.count <= 300 ? 3 : Math.ceil(c.content.count / 1000);
      let batch: string[] = [];
      let position = 0;
      for (const t of c.content.tokens()) {
        batch.push(t);
        if (batch.length >= size) {
          yield chunk(c.index, { content: batch.join("") }, o.logprobs ? { logprobs: logprobsFor(batch, position, o.topLogprobs) } : {});
          position += batch.length;
          batch = [];
          if (plan.failure) return yield* fail();
        }
      }
      if (batch.length > 0) {
        yield chunk(c.index, { content: batch.join("") }, o.logprobs ? { logprobs: logprobsFor(batch, position, o.topLogprobs) } : {});
        if (plan.failure) return yield* fail();
      }
    } else if (plan.failure) {
      return yield* fail();
    }

    const calls = (liveDocuments ? c.toolCalls : wireToolCalls(c, o.behaviour)) ?? [];
    const first = liveDocuments ? 1 : 0;
    for (const [i, call] of calls.entries()) {
      yield chunk(c.index, {
        tool_calls: [{ index: first + i, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }],
      });
      yield chunk(c.index, { tool_calls: [{ index: first + i, function: { arguments: call.function.arguments } }] });
    }
    yield chunk(c.index, {}, { finish_reason: c.finishReason, stop_reason: stopReason(c.finishReason) });
  }

  const citationsInUsage = plan.webSearched && !live && !asked;
  yield sse({
    ...base,
    choices: [],
    usage: o.usage,
    cost: o.cost,
    [o.names.parameters]: { ...plan.echo, ...(citationsInUsage ? { web_search_citations: plan.citations } : {}) },
  });
  if (asked && live) yield searchResults();
  yield DONE;
}
