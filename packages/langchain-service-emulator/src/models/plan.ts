/** The plan of one chat completion (./engine.ts builds it, ./render.ts writes it as JSON or SSE): its types. */
import type { BrandNames } from "langchain-service";
import type { EmulatedModel } from "./catalog.js";
import type { ChatBehaviour, InBandErrorKind } from "./chat-behaviour.js";
import type { WebDocument } from "./corpus.js";
import type { PromptBlock } from "./prompt-cache.js";
import type { ReasoningDetail } from "./reasoning.js";
import type { ChatRequest, EffectiveParameters } from "./request.js";
import type { TokenSource } from "./token-source.js";

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
