/**
 * One choice of the answer (first rule that applies, see ./engine.ts): tool calls, the answer after tool
 * results, structured JSON, web search, `[[emu:tokens=N]]` filler, or the echo; then thinking, `max_tokens`,
 * refusals, signed reasoning and the search-documents call, and the choice's token counts.
 */
import { createHash } from "node:crypto";
import type { BrandNames } from "langchain-service";
import type { EmulatedModel } from "./catalog.js";
import type { ChatBehaviour } from "./chat-behaviour.js";
import { answerFromDocuments, liveSearchDocuments, type WebDocument } from "./corpus.js";
import { extractFacts } from "./facts.js";
import type { PlannedChoice, WireToolCall } from "./plan.js";
import type { PlannedCall } from "./planner.js";
import { buildReasoningDetails, buildThoughtSignature } from "./reasoning.js";
import type { ChatRequest, EffectiveParameters } from "./request.js";
import { fillSchema } from "./structured.js";
import { concatSources, fillerSource, takeSource, textSource, type TokenSource } from "./token-source.js";
import { countTokens } from "./tokenizer.js";
import type { Turn } from "./turn.js";
import { SEARCH_DOCUMENTS_CALL_ID, SEARCH_DOCUMENTS_CALL_NAME } from "langchain-service";

/** tokens of the answer a refusal (`[[emu:refuse]]`) keeps before `finish_reason: "content_filter"` */
export const REFUSAL_CUT_TOKENS = 4;

function toolIdFor(responseId: string, choice: number, i: number, name: string): string {
  return `call_${createHash("sha256").update(`${responseId}/${choice}/${i}/${name}`).digest("hex").slice(0, 24)}`;
}

/**
 * A tool's JSON object result as a sentence-like line a person can read ("balance (raw 42250000, formatted
 * 42.25), symbol USDC"); an `{error}` as "error: <message>"; anything else unchanged.
 */
export function readable(content: string): string {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch {
    return content;
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) return content;
  const render = (v: unknown, depth: number): string => {
    if (v === null || typeof v !== "object") return String(v);
    if (Array.isArray(v)) return v.map((x) => render(x, depth + 1)).join(", ");
    const inner = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined && x !== null && x !== "")
      .map(([k, x]) => `${k} ${render(x, depth + 1)}`)
      .join(", ");
    return depth === 0 ? inner : `(${inner})`;
  };
  const err = (value as { error?: { message?: unknown } }).error;
  if (err && typeof err === "object" && typeof err.message === "string") return `error: ${err.message}`;
  return render(value, 0);
}

function compact(text: string, max = 200): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

function cutAtStop(text: string, stop: ChatRequest["stop"]): { text: string; stopped: boolean } {
  const stops = stop === null || stop === undefined ? [] : typeof stop === "string" ? [stop] : stop;
  let cut = -1;
  for (const s of stops) {
    if (!s) continue;
    const at = text.indexOf(s);
    if (at >= 0 && (cut < 0 || at < cut)) cut = at;
  }
  return cut < 0 ? { text, stopped: false } : { text: text.slice(0, cut), stopped: true };
}

/** What every choice of one completion shares (planned once in ./engine.ts). */
export interface ChoiceContext {
  request: ChatRequest;
  model: EmulatedModel;
  params: EffectiveParameters;
  names: BrandNames;
  secret: Uint8Array;
  responseId: string;
  behaviour: ChatBehaviour;
  turn: Turn;
  calls: PlannedCall[];
  webSearched: boolean;
  citations: WebDocument[];
  format: ChatRequest["response_format"];
  /** a JSON schema a system or developer message asks the answer to follow */
  promptSchema: Record<string, unknown> | undefined;
  thinkingOn: boolean;
  thought: string;
  n: number;
  maxTokens: number | undefined;
}

/** Choice `index` of the answer, and the tool call ids it signed with reasoning. */
export function planChoice(ctx: ChoiceContext, index: number): { choice: PlannedChoice; signedIds: string[] } {
  const {
    request,
    model,
    params,
    names,
    secret,
    behaviour,
    calls,
    webSearched,
    citations,
    format,
    promptSchema,
    thinkingOn,
    thought,
    n,
    maxTokens,
  } = ctx;
  const { directives, question, afterToolResults, toolResults, refused } = ctx.turn;
  const signedIds: string[] = [];
  const suffix = n > 1 ? ` (choice ${index + 1})` : "";
  let content: TokenSource | null = null;
  let finishReason: PlannedChoice["finishReason"] = "stop";
  const toolCalls: WireToolCall[] = calls.map((c, i) => ({
    id: toolIdFor(ctx.responseId, index, i, c.name),
    type: "function",
    function: { name: c.name, arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments ?? {}) },
  }));
  let reasoningTokens = 0;
  let hiddenTokens = 0;
  const choice: Partial<PlannedChoice> = {};

  if (toolCalls.length > 0) {
    finishReason = "tool_calls";
  } else {
    let answer: string | undefined;
    let base: string;
    if (afterToolResults && toolResults.length > 0) {
      base = toolResults.map((r) => `Based on ${r.name}: ${compact(readable(r.content), 300)}`).join(" ");
    } else if (webSearched) {
      base = answerFromDocuments(question, citations, params.enable_web_citations ? behaviour.citationMarkers : undefined);
    } else {
      base = `Echo: ${question}`.trim();
    }
    const schemaAsked =
      format?.type === "json_schema"
        ? (format.json_schema.schema ?? { type: "object", properties: {} })
        : format?.type === "json_object"
          ? undefined
          : promptSchema;
    if (schemaAsked) {
      const schema = schemaAsked;
      const context = afterToolResults ? `${question}\n${toolResults.map((r) => r.content).join("\n")}` : question;
      answer = JSON.stringify(fillSchema(schema, extractFacts(context), { fallback: true, question: context })?.value ?? {});
    } else if (format?.type === "json_object") {
      answer = JSON.stringify({ answer: `${base}${suffix}` });
    } else if (directives.tokens !== undefined && !afterToolResults && !webSearched) {
      content = fillerSource(directives.tokens);
    } else {
      answer = `${base}${suffix}`;
    }
    if (answer !== undefined) {
      const cut = cutAtStop(answer, request.stop);
      content = textSource(cut.text);
    }
    if (model.reasoning === "think-tags" && thinkingOn) {
      const thinkBlock = `<think>${thought}</think>\n\n`;
      reasoningTokens = countTokens(thinkBlock);
      if (params.strip_thinking_response) hiddenTokens += reasoningTokens;
      else content = concatSources(textSource(thinkBlock), content ?? textSource(""));
    }
    if (maxTokens !== undefined && content && content.count > maxTokens) {
      content = takeSource(content, maxTokens);
      finishReason = "length";
    }
    if (refused) {
      content = takeSource(content ?? textSource(""), REFUSAL_CUT_TOKENS);
      finishReason = "content_filter";
    }
  }

  if (thinkingOn && (model.reasoning === "details" || model.reasoning === "content")) {
    reasoningTokens = countTokens(thought);
    hiddenTokens += reasoningTokens;
    choice.reasoningContent = thought;
    // the live service strips `reasoning_content` too; signed details stay, to be sent back on tool-call turns
    if (params.strip_thinking_response) choice.reasoningContentStripped = true;
    if (model.reasoning === "details") {
      choice.reasoningDetails = buildReasoningDetails(
        secret,
        thought,
        toolCalls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
      );
      choice.thoughtSignature = buildThoughtSignature(
        secret,
        ctx.responseId,
        index,
        toolCalls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
      );
      signedIds.push(...toolCalls.map((c) => c.id));
    }
  }

  // (signed reasoning covers the model's own calls only: the search-documents call is the service's)
  let documentsCall: WireToolCall | undefined;
  if (webSearched && params.return_search_results_as_documents) {
    documentsCall = behaviour.liveSearchDocuments
      ? {
          id: SEARCH_DOCUMENTS_CALL_ID,
          type: "function",
          function: { name: SEARCH_DOCUMENTS_CALL_NAME, arguments: JSON.stringify(liveSearchDocuments(citations)) },
        }
      : {
          id: toolIdFor(ctx.responseId, index, toolCalls.length, names.webSearchDocumentsTool),
          type: "function",
          function: { name: names.webSearchDocumentsTool, arguments: JSON.stringify({ documents: citations }) },
        };
    // live: "sets finish_reason: tool_calls" (a cut answer stays "length")
    if (behaviour.liveSearchDocuments && finishReason === "stop") finishReason = "tool_calls";
  }

  const callTokens = [...toolCalls, ...(documentsCall ? [documentsCall] : [])].reduce(
    (sum, c) => sum + countTokens(c.function.name) + countTokens(c.function.arguments),
    0,
  );
  return {
    choice: {
      ...choice,
      index,
      content,
      ...(toolCalls.length > 0 ? { toolCalls } : {}),
      ...(documentsCall ? { documentsCall } : {}),
      finishReason,
      completionTokens: (content?.count ?? 0) + hiddenTokens + callTokens,
      reasoningTokens,
    },
    signedIds,
  };
}
