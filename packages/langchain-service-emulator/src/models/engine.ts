/**
 * The emulator's deterministic "model": every answer is derived from the request, so tests can assert on it.
 * The parts, in the order a request goes through them: ./prompt.ts (the prompt as cache blocks, its checks),
 * ./turn.ts (directives and the tool calls of this turn), ./choice.ts (each choice of the answer), ./usage.ts
 * (usage and cost); the plan's types are in ./plan.ts.
 *
 * Answers (first rule that applies):
 * 1. a tool call: `[[emu:tool=...]]` directive, `tool_choice` forcing a function, or the planner (./planner.ts)
 *    when tools are offered and `tool_choice` is not "none" -> `finish_reason: "tool_calls"`, content null;
 * 2. after tool results (last message role "tool"): "Based on <tool name>: <compact tool content>" per result
 *    since the last user message (unless the planner still has an uncalled tool for the request);
 * 3. `response_format` json_schema, or (without a response format) a JSON schema a system or developer message asks
 *    the answer to follow: JSON filled from the prompt (./structured.ts); json_object: `{"answer": <the text answer>}`;
 * 4. web search on (or "auto" and the question looks factual): sentences from the local corpus
 *    (./corpus.ts), with citation markers when citations are on (`^n^` live, `[REF]n[/REF]` seed);
 * 5. `[[emu:tokens=N]]`: exactly N filler tokens ("lorem ipsum dolor ..."), produced lazily;
 * 6. otherwise `Echo: <last user text>` (directives removed, trimmed; decoded text files included).
 * With n > 1, each text answer ends with ` (choice i)` (1-based). `seed`/`temperature` change nothing.
 *
 * Test directives, written anywhere in the LAST user message and removed from the text the model "sees":
 * - `[[emu:tokens=N]]`          answer with exactly N completion tokens (streamed lazily, never built up front)
 * - `[[emu:tool=NAME {json}]]`  call tool NAME with these JSON arguments (may repeat for several calls)
 * - `[[emu:error]]`             stream: an in-band `data: {"error": {code: "upstream_error"}}` then `[DONE]`
 *                               after the first content chunk; non-stream: a 500
 * - `[[emu:error=model_overloaded]]`  the same with `{code: "model_overloaded", retry_after}`; non-stream: a 429
 *                               with `Retry-After`
 * - `[[emu:error=content_filter]]`    the same with `{type: "content_filter_error", code:
 *                               "content_blocked_by_provider"}`; non-stream: as `[[emu:refuse]]`
 * - `[[emu:error=e2ee_attestation_stale]]`, `[[emu:error=api_error]]`  the same with those codes (`type: "api_error"`)
 * - `[[emu:refuse]]`            the answer is cut after a few tokens with `finish_reason: "content_filter"` (a 200)
 *
 * Tokens (./tokenizer.ts): words and punctuation. Prompt tokens = per message 4 + its text tokens (+85 per
 * image, 100 per audio, 200 per video part), + the tool definitions' JSON tokens, + the service system
 * prompt's tokens unless `include_<brand>_system_prompt` is false.
 *
 * Reasoning: `emu-reasoner` ("details") returns `reasoning_content: "Thinking about: <question>"`, signed
 * `reasoning_details` and a `thought_signature` on the message (./reasoning.ts); both must come back unchanged
 * on tool-call turns, and a `thought_signature` sent back on any assistant message must verify.
 * `emu-thinker` ("think-tags") writes `<think>...</think>` before the answer in content
 * (`strip_thinking_response` removes it from the answer, and `reasoning_content` from a reasoning model's; the
 * tokens still count as reasoning). `disable_thinking`,
 * `reasoning_effort: "none"`, or `reasoning.enabled: false` without an effort switch thinking off.
 * `max_tokens`/`max_completion_tokens` cut the visible content (finish_reason "length"); `stop` cuts at the
 * first stop string (not applied to `[[emu:tokens=N]]` filler). The model's maxCompletionTokens is not
 * enforced, so a test can ask for a 100k-token answer from any model.
 */
import { chatBehaviour } from "./chat-behaviour.js";
import { planChoice, type ChoiceContext } from "./choice.js";
import { looksLikeItNeedsSearch, searchCorpus } from "./corpus.js";
import type { CompletionPlan, EngineInput, PlannedChoice } from "./plan.js";
import { readPrompt, verifyReturnedReasoning } from "./prompt.js";
import { InvalidRequest, parametersEcho } from "./request.js";
import { schemaInSystemPrompt } from "./structured.js";
import { planTurnCalls, readTurn } from "./turn.js";

/** Plans one chat completion from its request; throws InvalidRequest (a 400) before any answer is planned. */
export function planCompletion(input: EngineInput): CompletionPlan {
  const { request, model, params, names } = input;
  const behaviour = input.behaviour ?? chatBehaviour({});
  const messages = request.messages;

  const { seen, blocks, promptTokens, functionTools, webSearchTool } = readPrompt(input);
  verifyReturnedReasoning(input);

  // the request as the model reads it, and the tool calls of this turn
  const turn = readTurn(request, seen);
  const { question, afterToolResults, toolResults, failure } = turn;
  const calls = planTurnCalls(request, turn, functionTools);

  // web search
  let searchMode = params.enable_web_search;
  if (webSearchTool && searchMode === "off") searchMode = "on";
  if (searchMode === "on" && !model.capabilities.supportsWebSearch) {
    throw new InvalidRequest(`Model ${model.id} does not support web search`, {
      [names.parameters]: "enable_web_search needs a model with web search",
    });
  }
  const webSearched =
    calls.length === 0 &&
    !afterToolResults &&
    model.capabilities.supportsWebSearch &&
    (searchMode === "on" || (searchMode === "auto" && looksLikeItNeedsSearch(question)));
  const citations = webSearched ? searchCorpus(question) : [];

  // response format, or a JSON schema the system prompt asks the answer to follow
  const format = request.response_format;
  const promptSchema = format && format.type !== "text" ? undefined : schemaInSystemPrompt(messages, seen);
  if (format?.type === "json_schema" && !model.capabilities.supportsResponseSchema) {
    throw new InvalidRequest(`Model ${model.id} does not support response_format json_schema`, {
      response_format: "unsupported by this model",
    });
  }

  // reasoning
  // `reasoning.enabled: false` (live) switches thinking off unless an effort is set
  const effortSet = request.reasoning_effort != null || request.reasoning?.effort != null;
  const thinkingOn =
    !!model.reasoning &&
    !params.disable_thinking &&
    request.reasoning_effort !== "none" &&
    !(request.reasoning_effort == null && request.reasoning?.effort === "none") &&
    !(request.reasoning?.enabled === false && !effortSet);
  const thought = afterToolResults
    ? `Thinking about: the results of ${[...new Set(toolResults.map((r) => r.name))].join(", ")} for "${question}"`
    : `Thinking about: ${question}`;

  const n = request.n ?? 1;
  const maxTokensRaw = request.max_completion_tokens ?? request.max_tokens;
  const maxTokens = maxTokensRaw !== null && maxTokensRaw !== undefined && maxTokensRaw > 0 ? maxTokensRaw : undefined;

  const { secret, responseId } = input;
  const ctx: ChoiceContext = {
    request,
    model,
    params,
    names,
    secret,
    responseId,
    behaviour,
    turn,
    calls,
    webSearched,
    citations,
    format,
    promptSchema,
    thinkingOn,
    thought,
    n,
    maxTokens,
  };
  const choices: PlannedChoice[] = [];
  const signedToolCallIds: string[] = [];
  for (let index = 0; index < n; index++) {
    const { choice, signedIds } = planChoice(ctx, index);
    choices.push(choice);
    signedToolCallIds.push(...signedIds);
  }

  return {
    model,
    choices,
    promptTokens,
    promptBlocks: blocks,
    webSearched,
    citations,
    ...(failure ? { failure } : {}),
    echo: parametersEcho(params, names),
    signedToolCallIds,
  };
}
