/**
 * The prompt as the model reads it: messages as cache blocks (./prompt-cache.ts) and their token count, the
 * offered tools, and the checks that refuse a prompt before any answer is planned (vision, context length, and
 * signed reasoning that must come back unchanged).
 */
import type { EngineInput } from "./plan.js";
import { canonicalJson, type ToolSpec } from "./planner.js";
import type { PromptBlock } from "./prompt-cache.js";
import { verifyReasoningDetails, verifyThoughtSignature } from "./reasoning.js";
import { InvalidRequest } from "./request.js";
import { seeMessage, toolCallsOf, type SeenMessage } from "./seen-messages.js";
import { countTokens } from "./tokenizer.js";
import { SEARCH_DOCUMENTS_CALL_ID } from "langchain-service";

export const SERVICE_SYSTEM_PROMPT =
  "You are a helpful assistant served by the local service emulator. Answer briefly and accurately, use the tools you are given when they help, and cite your sources when web search results are provided.";
export const MESSAGE_OVERHEAD_TOKENS = 4;

export interface ReadPrompt {
  seen: SeenMessage[];
  blocks: PromptBlock[];
  promptTokens: number;
  functionTools: ToolSpec[];
  /** a `web_search` tool was offered (switches search on) */
  webSearchTool: boolean;
}

export function readPrompt(input: EngineInput): ReadPrompt {
  const { request, model, params } = input;
  const messages = request.messages;
  const seen = messages.map(seeMessage);
  if (!model.capabilities.supportsVision && seen.some((m) => m.hasImage)) {
    throw new InvalidRequest(`Model ${model.id} does not support image input`, { messages: "image_url parts need a vision model" });
  }
  const blocks: PromptBlock[] = [];
  if (params.include_system_prompt) {
    blocks.push({
      key: `service-system:${SERVICE_SYSTEM_PROMPT}`,
      tokens: MESSAGE_OVERHEAD_TOKENS + countTokens(SERVICE_SYSTEM_PROMPT),
      breakpoint: false,
    });
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
      key: canonicalJson({
        role: s.role,
        text: s.text,
        media: s.mediaTokens,
        calls,
        id: message.role === "tool" ? message.tool_call_id : undefined,
      }),
      tokens: MESSAGE_OVERHEAD_TOKENS + countTokens(s.text) + s.mediaTokens + countTokens(callText),
      breakpoint: (isSystem && leadingSystem) || s.cacheControl,
    });
  });
  const promptTokens = blocks.reduce((sum, b) => sum + b.tokens, 0);
  if (promptTokens > model.contextTokens) {
    throw new InvalidRequest(`This model's maximum context length is ${model.contextTokens} tokens; the request has ${promptTokens}`, {
      messages: "context_length_exceeded",
    });
  }
  return { seen, blocks, promptTokens, functionTools, webSearchTool };
}

/** Signed reasoning (./reasoning.ts) sent back on assistant messages must verify; throws InvalidRequest if not. */
export function verifyReturnedReasoning(input: EngineInput): void {
  const { request, model, names, secret } = input;
  const messages = request.messages;
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
}
