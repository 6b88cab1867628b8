/**
 * The emulator's deterministic "model": every answer is derived from the request, so tests can assert on it.
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
import { createHash } from "node:crypto";
import { SEARCH_DOCUMENTS_CALL_ID, SEARCH_DOCUMENTS_CALL_NAME, type BrandNames } from "langchain-service";
import type { EmulatedModel } from "./catalog.js";
import { chatBehaviour, type ChatBehaviour, type InBandErrorKind } from "./chat-behaviour.js";
import { answerFromDocuments, liveSearchDocuments, looksLikeItNeedsSearch, searchCorpus, type WebDocument } from "./corpus.js";
import { extractFacts } from "./facts.js";
import { callSignature, canonicalJson, planToolCalls, type PlannedCall, type ToolChoice, type ToolSpec } from "./planner.js";
import type { PromptBlock } from "./prompt-cache.js";
import { buildReasoningDetails, buildThoughtSignature, verifyReasoningDetails, verifyThoughtSignature, type ReasoningDetail } from "./reasoning.js";
import { InvalidRequest, parametersEcho, type ChatMessage, type ChatRequest, type EffectiveParameters } from "./request.js";
import { fillSchema, schemaInSystemPrompt } from "./structured.js";
import { countTokens, fillerToken, tokenize } from "./tokenizer.js";

export const SERVICE_SYSTEM_PROMPT =
  "You are a helpful assistant served by the local service emulator. Answer briefly and accurately, use the tools you are given when they help, and cite your sources when web search results are provided.";
export const MESSAGE_OVERHEAD_TOKENS = 4;
export const MEDIA_TOKENS = { image_url: 85, input_audio: 100, video_url: 200 } as const;
/** flat fee per request that used web search, USD */
export const WEB_SEARCH_FEE_USD = 0.01;
/** tokens of the answer a refusal (`[[emu:refuse]]`) keeps before `finish_reason: "content_filter"` */
export const REFUSAL_CUT_TOKENS = 4;
/** upper bound of `[[emu:tokens=N]]` */
export const MAX_DIRECTIVE_TOKENS = 5_000_000;

/** The answer text as a token sequence that can be produced lazily (a 100k-token stream is never held whole). */
export interface TokenSource {
  count: number;
  tokens(): Iterable<string>;
}

export function textSource(text: string): TokenSource {
  const tokens = tokenize(text);
  return { count: tokens.length, tokens: () => tokens };
}

function fillerSource(count: number): TokenSource {
  return {
    count,
    *tokens() {
      for (let i = 0; i < count; i++) yield fillerToken(i);
    },
  };
}

function concatSources(a: TokenSource, b: TokenSource): TokenSource {
  return {
    count: a.count + b.count,
    *tokens() {
      yield* a.tokens();
      yield* b.tokens();
    },
  };
}

function takeSource(src: TokenSource, max: number): TokenSource {
  return {
    count: Math.min(src.count, max),
    *tokens() {
      let i = 0;
      if (max <= 0) return;
      for (const t of src.tokens()) {
        yield t;
        if (++i >= max) return;
      }
    },
  };
}

export function sourceText(src: TokenSource): string {
  let s = "";
  for (const t of src.tokens()) s += t;
  return s;
}

export interface WireToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface PlannedChoice {
  index: number;
  content: TokenSource | null;
  reasoningContent?: string;
  /** `strip_thinking_response`: `reasoning_content` is left out of the answer (the reasoning still ran and is billed) */
  reasoningContentStripped?: boolean;
  reasoningDetails?: ReasoningDetail[];
  /** `message.thought_signature` (./reasoning.ts) */
  thoughtSignature?: string;
  toolCalls?: WireToolCall[];
  /** `return_search_results_as_documents`: the search-documents call (live or seed shape), not a tool to run */
  documentsCall?: WireToolCall;
  finishReason: "stop" | "length" | "tool_calls" | "content_filter";
  completionTokens: number;
  reasoningTokens: number;
}

export interface CompletionPlan {
  model: EmulatedModel;
  choices: PlannedChoice[];
  promptTokens: number;
  /** messages as cache blocks (./prompt-cache.ts) */
  promptBlocks: PromptBlock[];
  /** web search ran (billed); citations may be empty */
  webSearched: boolean;
  citations: WebDocument[];
  /** `[[emu:error=...]]`: the answer fails with this in-band error (in a stream) */
  failure?: InBandErrorKind;
  echo: Record<string, unknown>;
  /** tool call ids issued with signed reasoning (to verify them on later turns) */
  signedToolCallIds: string[];
}

export interface EngineInput {
  request: ChatRequest;
  model: EmulatedModel;
  params: EffectiveParameters;
  names: BrandNames;
  /** per-server secret for reasoning signatures */
  secret: Uint8Array;
  /** the response id, used to derive tool call ids */
  responseId: string;
  /** was this tool call id issued by this server with signed reasoning? */
  isSignedToolCall?(id: string): boolean;
  /** live or seed behaviour (default: live) */
  behaviour?: ChatBehaviour;
}

// --- directives -------------------------------------------------------------------------------------------

export interface Directives {
  tokens?: number;
  /** any `[[emu:error]]` directive */
  error: boolean;
  /** which in-band error it asks for (`[[emu:error]]`: `upstream_error`) */
  errorKind?: InBandErrorKind;
  /** `[[emu:refuse]]` */
  refuse: boolean;
  tools: PlannedCall[];
  /** the text without directives, trimmed */
  text: string;
}

const TOOL_DIRECTIVE_RE = /\[\[emu:tool=([\w.-]+)\s*(\{[\s\S]*?\})?\s*\]\]/g;
const TOKENS_DIRECTIVE_RE = /\[\[emu:tokens=(\d+)\]\]/g;
const ERROR_DIRECTIVE_RE = /\[\[emu:error(?:=(upstream_error|model_overloaded|content_filter|e2ee_attestation_stale|api_error))?\]\]/g;
const REFUSE_DIRECTIVE_RE = /\[\[emu:refuse\]\]/g;

export function parseDirectives(text: string): Directives {
  const tools: PlannedCall[] = [];
  for (const m of text.matchAll(TOOL_DIRECTIVE_RE)) {
    let args: unknown = {};
    if (m[2]) {
      try {
        args = JSON.parse(m[2]);
      } catch {
        throw new InvalidRequest("Invalid [[emu:tool]] directive", { messages: `arguments of ${m[1]} are not JSON: ${m[2]}` });
      }
    }
    tools.push({ name: m[1] ?? "", arguments: args });
  }
  let tokens: number | undefined;
  for (const m of text.matchAll(TOKENS_DIRECTIVE_RE)) tokens = Number(m[1]);
  if (tokens !== undefined && tokens > MAX_DIRECTIVE_TOKENS) {
    throw new InvalidRequest("Invalid [[emu:tokens]] directive", { messages: `at most ${MAX_DIRECTIVE_TOKENS} tokens` });
  }
  let errorKind: InBandErrorKind | undefined;
  for (const m of text.matchAll(ERROR_DIRECTIVE_RE)) errorKind = (m[1] as InBandErrorKind | undefined) ?? "upstream_error";
  const refuse = REFUSE_DIRECTIVE_RE.test(text);
  REFUSE_DIRECTIVE_RE.lastIndex = 0;
  const stripped = text
    .replace(TOOL_DIRECTIVE_RE, "")
    .replace(TOKENS_DIRECTIVE_RE, "")
    .replace(ERROR_DIRECTIVE_RE, "")
    .replace(REFUSE_DIRECTIVE_RE, "")
    .replace(/[ \t]{2,}/g, " ")
    .trim();
  return { ...(tokens !== undefined ? { tokens } : {}), error: errorKind !== undefined, ...(errorKind ? { errorKind } : {}), refuse, tools, text: stripped };
}

// --- messages as the model sees them ----------------------------------------------------------------------

/** Text of a `file` part: data URLs with text types are decoded; other files become a short placeholder. */
export function decodeFileData(fileData: string, filename?: string | null): string {
  const label = filename ?? "attachment";
  const dataUrl = /^data:([^;,]*)((?:;[^;,]*)*),([\s\S]*)$/.exec(fileData);
  if (dataUrl) {
    const mime = (dataUrl[1] || "text/plain").toLowerCase();
    const isBase64 = /;base64/i.test(dataUrl[2] ?? "");
    const payload = dataUrl[3] ?? "";
    const textual = mime.startsWith("text/") || /json|xml|yaml|csv|javascript|typescript|markdown|x-sh|sql/.test(mime);
    if (!textual) return `[file ${label} (${mime})]`;
    try {
      return isBase64 ? Buffer.from(payload, "base64").toString("utf8") : decodeURIComponent(payload);
    } catch {
      return `[file ${label} (${mime})]`;
    }
  }
  if (/^https?:\/\//i.test(fileData)) return `[file ${label} at ${fileData}]`;
  return fileData;
}

interface SeenMessage {
  role: ChatMessage["role"];
  text: string;
  mediaTokens: number;
  hasImage: boolean;
  cacheControl: boolean;
}

function seeMessage(message: ChatMessage): SeenMessage {
  const content = message.content;
  if (content === null || content === undefined) {
    return { role: message.role, text: "", mediaTokens: 0, hasImage: false, cacheControl: false };
  }
  if (typeof content === "string") return { role: message.role, text: content, mediaTokens: 0, hasImage: false, cacheControl: false };
  const texts: string[] = [];
  let mediaTokens = 0;
  let hasImage = false;
  let cacheControl = false;
  for (const part of content) {
    if (part.cache_control) cacheControl = true;
    switch (part.type) {
      case "text":
        texts.push(part.text);
        break;
      case "file":
        texts.push(decodeFileData(part.file.file_data, part.file.filename));
        break;
      case "image_url":
        hasImage = true;
        mediaTokens += MEDIA_TOKENS.image_url;
        break;
      case "input_audio":
        mediaTokens += MEDIA_TOKENS.input_audio;
        break;
      case "video_url":
        mediaTokens += MEDIA_TOKENS.video_url;
        break;
    }
  }
  return { role: message.role, text: texts.join("\n"), mediaTokens, hasImage, cacheControl };
}

function toolCallsOf(message: ChatMessage): { id: string; name: string; arguments: string }[] {
  if (message.role !== "assistant" || !message.tool_calls) return [];
  return message.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
}

// --- the plan ---------------------------------------------------------------------------------------------

function resolveToolChoice(raw: ChatRequest["tool_choice"]): ToolChoice {
  if (raw === null || raw === undefined) return "auto";
  if (typeof raw === "string") return raw === "any" ? "required" : raw;
  return { name: raw.function.name };
}

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

export function planCompletion(input: EngineInput): CompletionPlan {
  const { request, model, params, names, secret } = input;
  const behaviour = input.behaviour ?? chatBehaviour({});
  const messages = request.messages;

  // what the model "sees", and the prompt as cache blocks
  const seen = messages.map(seeMessage);
  if (!model.capabilities.supportsVision && seen.some((m) => m.hasImage)) {
    throw new InvalidRequest(`Model ${model.id} does not support image input`, { messages: "image_url parts need a vision model" });
  }
  const blocks: PromptBlock[] = [];
  if (params.include_system_prompt) {
    blocks.push({ key: `service-system:${SERVICE_SYSTEM_PROMPT}`, tokens: MESSAGE_OVERHEAD_TOKENS + countTokens(SERVICE_SYSTEM_PROMPT), breakpoint: false });
  }
  const functionTools: ToolSpec[] = [];
  let webSearchTool = false;
  for (const t of request.tools ?? []) {
    if ("function" in t && t.function) {
      const fn = t.function as { name: string; description?: string | null; parameters?: Record<string, unknown> | null };
      functionTools.push({
        name: fn.name,
        ...(fn.description ? { description: fn.description } : {}),
        ...(fn.parameters ? { parameters: fn.parameters } : {}),
      });
    } else webSearchTool = true;
  }
  if (request.tools && request.tools.length > 0) {
    const json = JSON.stringify(request.tools);
    blocks.push({ key: `tools:${json}`, tokens: countTokens(json), breakpoint: false });
  }
  let leadingSystem = true;
  messages.forEach((message, i) => {
    const s = seen[i]!;
    const calls = toolCallsOf(message);
    const callText = calls.map((c) => `${c.name} ${c.arguments}`).join(" ");
    const isSystem = s.role === "system" || s.role === "developer";
    if (!isSystem) leadingSystem = false;
    blocks.push({
      key: canonicalJson({ role: s.role, text: s.text, media: s.mediaTokens, calls, id: message.role === "tool" ? message.tool_call_id : undefined }),
      tokens: MESSAGE_OVERHEAD_TOKENS + countTokens(s.text) + s.mediaTokens + countTokens(callText),
      breakpoint: (isSystem && leadingSystem) || s.cacheControl,
    });
  });
  const promptTokens = blocks.reduce((sum, b) => sum + b.tokens, 0);
  if (promptTokens > model.contextTokens) {
    throw new InvalidRequest(
      `This model's maximum context length is ${model.contextTokens} tokens; the request has ${promptTokens}`,
      { messages: "context_length_exceeded" },
    );
  }

  // signed reasoning must come back unchanged on tool-call turns
  if (model.reasoning === "details" && input.isSignedToolCall) {
    messages.forEach((message, i) => {
      if (message.role !== "assistant") return;
      const calls = toolCallsOf(message);
      if (!calls.some((c) => input.isSignedToolCall!(c.id))) return;
      const details = (message.reasoning_details ?? []).map((d) => ({
        type: d.type,
        ...(typeof d.text === "string" ? { text: d.text } : {}),
        ...(typeof d.data === "string" ? { data: d.data } : {}),
        ...(typeof d.index === "number" ? { index: d.index } : {}),
      }));
      const verdict = verifyReasoningDetails(secret, details, calls);
      if (!verdict.ok) {
        throw new InvalidRequest(
          "reasoning_details missing or altered: send the assistant message's reasoning_details back exactly as received",
          { [`messages.${i}.reasoning_details`]: verdict.reason },
        );
      }
    });
  }
  // thought_signature: required back on this server's tool-call turns; verified wherever it is sent back
  if (model.reasoning === "details") {
    messages.forEach((message, i) => {
      if (message.role !== "assistant") return;
      // the search-documents call is added after signing (and LangChain clients drop it)
      const calls = toolCallsOf(message).filter((c) => c.name !== names.webSearchDocumentsTool && c.id !== SEARCH_DOCUMENTS_CALL_ID);
      const issuedHere = !!input.isSignedToolCall && calls.some((c) => input.isSignedToolCall!(c.id));
      if (!issuedHere && (message.thought_signature === null || message.thought_signature === undefined)) return;
      const verdict = verifyThoughtSignature(secret, message.thought_signature, calls);
      if (!verdict.ok) {
        throw new InvalidRequest(
          "thought_signature missing or altered: pass the assistant message's thought_signature back exactly as received to preserve thought signatures (reasoning)",
          { [`messages.${i}.thought_signature`]: verdict.reason },
        );
      }
    });
  }

  // the request as the model reads it
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === "user") {
      lastUser = i;
      break;
    }
  }
  const directives = parseDirectives(lastUser >= 0 ? seen[lastUser]!.text : "");
  // a provider's block mid-stream is an in-band error; without a stream it is the refusal itself
  const stream = request.stream === true;
  const refused = directives.refuse || (directives.errorKind === "content_filter" && !stream);
  const failure = directives.errorKind === "content_filter" && !stream ? undefined : directives.errorKind;
  const question = lastUser >= 0 ? directives.text : (seen[seen.length - 1]?.text ?? "").trim();
  const afterToolResults = messages[messages.length - 1]?.role === "tool";
  const alreadyCalled: PlannedCall[] = [];
  const toolNames = new Map<string, string>();
  const toolResults: { name: string; content: string }[] = [];
  messages.forEach((message, i) => {
    if (i <= lastUser) return;
    for (const c of toolCallsOf(message)) {
      alreadyCalled.push({ name: c.name, arguments: c.arguments });
      toolNames.set(c.id, c.name);
    }
    if (message.role === "tool") {
      toolResults.push({ name: toolNames.get(message.tool_call_id) ?? message.name ?? "the tool", content: seen[i]!.text });
    }
  });

  // tool calls of this turn
  const toolChoice = resolveToolChoice(request.tool_choice);
  const parallel = request.parallel_tool_calls ?? true;
  const seenCalls = new Set(alreadyCalled.map(callSignature));
  let calls: PlannedCall[] = directives.tools.filter((c) => !seenCalls.has(callSignature(c)));
  if (calls.length === 0 && functionTools.length > 0 && toolChoice !== "none") {
    calls = planToolCalls({ tools: functionTools, toolChoice, parallel, userText: question, alreadyCalled });
  }
  if (!parallel) calls = calls.slice(0, 1);

  // web search
  let searchMode = params.enable_web_search;
  if (webSearchTool && searchMode === "off") searchMode = "on";
  if (searchMode === "on" && !model.capabilities.supportsWebSearch) {
    throw new InvalidRequest(`Model ${model.id} does not support web search`, { [names.parameters]: "enable_web_search needs a model with web search" });
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
    throw new InvalidRequest(`Model ${model.id} does not support response_format json_schema`, { response_format: "unsupported by this model" });
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

  const choices: PlannedChoice[] = [];
  const signedToolCallIds: string[] = [];
  for (let index = 0; index < n; index++) {
    const suffix = n > 1 ? ` (choice ${index + 1})` : "";
    let content: TokenSource | null = null;
    let finishReason: PlannedChoice["finishReason"] = "stop";
    const toolCalls: WireToolCall[] = calls.map((c, i) => ({
      id: toolIdFor(input.responseId, index, i, c.name),
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
      const schemaAsked = format?.type === "json_schema" ? (format.json_schema.schema ?? { type: "object", properties: {} }) : format?.type === "json_object" ? undefined : promptSchema;
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
          input.responseId,
          index,
          toolCalls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
        );
        signedToolCallIds.push(...toolCalls.map((c) => c.id));
      }
    }

    // (signed reasoning covers the model's own calls only: the search-documents call is the service's)
    let documentsCall: WireToolCall | undefined;
    if (webSearched && params.return_search_results_as_documents) {
      documentsCall = behaviour.liveSearchDocuments
        ? { id: SEARCH_DOCUMENTS_CALL_ID, type: "function", function: { name: SEARCH_DOCUMENTS_CALL_NAME, arguments: JSON.stringify(liveSearchDocuments(citations)) } }
        : {
            id: toolIdFor(input.responseId, index, toolCalls.length, names.webSearchDocumentsTool),
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
    choices.push({
      ...choice,
      index,
      content,
      ...(toolCalls.length > 0 ? { toolCalls } : {}),
      ...(documentsCall ? { documentsCall } : {}),
      finishReason,
      completionTokens: (content?.count ?? 0) + hiddenTokens + callTokens,
      reasoningTokens,
    });
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

// --- usage, cost, rendering -------------------------------------------------------------------------------

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number; cache_creation_input_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
}

export function usageOf(plan: CompletionPlan, cache: { cachedTokens: number; cacheCreationTokens: number }): Usage {
  const completion = plan.choices.reduce((sum, c) => sum + c.completionTokens, 0);
  const reasoning = plan.choices.reduce((sum, c) => sum + c.reasoningTokens, 0);
  return {
    prompt_tokens: plan.promptTokens,
    completion_tokens: completion,
    total_tokens: plan.promptTokens + completion,
    prompt_tokens_details: { cached_tokens: cache.cachedTokens, cache_creation_input_tokens: cache.cacheCreationTokens },
    completion_tokens_details: { reasoning_tokens: reasoning },
  };
}

/**
 * The model's charge in USD: pricing per 1M tokens, cached prompt tokens at the cache_input price. Web search
 * is an add-on charged apart (WEB_SEARCH_FEE_USD, its own ledger row).
 */
export function costUsd(model: EmulatedModel, usage: Usage): number {
  const cached = usage.prompt_tokens_details.cached_tokens;
  const cachePrice = model.pricing.cache_input ?? model.pricing.input;
  const usd = ((usage.prompt_tokens - cached) * model.pricing.input + cached * cachePrice + usage.completion_tokens * model.pricing.output) / 1e6;
  return Math.round(usd * 1e9) / 1e9;
}
