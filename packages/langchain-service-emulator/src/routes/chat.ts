/**
 * POST /chat/completions. The server has already authenticated the caller, found the model, checked Pro-only,
 * balance and rate limits; this route validates the body (live: with the live fields, and the capability gates of
 * ../models/capabilities.ts), applies the model feature suffix, runs the
 * deterministic engine (../models/engine.ts), charges the ledger, and answers JSON or an SSE stream
 * (../models/render.ts). The model's charge and the web-search add-on are two CHARGE rows of one request id.
 * Streams are charged before the first byte (the whole completion is known up front); a stream that fails
 * in-band (`[[emu:error=...]]`) is then refunded (live) or was never charged (seed). The first
 * `chat.overloadedStreams` streams fail with `model_overloaded` before any content, uncharged; the first
 * `faults.streamErrors.first` streams with its in-band error, before any content or after it. Stream cuts
 * (`faults.streamCutAfter`) are done by the server. A `character_slug` prepends its character's system prompt (404
 * for one that names no character).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { z } from "zod";
import { findModel } from "../models/catalog.js";
import { capabilityIssues } from "../models/capabilities.js";
import { availabilityRefusal, modelGatesOn, parameterIssues } from "../models/availability.js";
import { chatBehaviour, inBandEventOf } from "../models/chat-behaviour.js";
import { planCompletion } from "../models/engine.js";
import { costUsd, usageOf, WEB_SEARCH_FEE_USD } from "../models/usage.js";
import { failedStream, overloadedStream, renderCompletion, streamCompletion } from "../models/render.js";
import { PromptCache } from "../models/prompt-cache.js";
import { messageRuleIssues, withoutEmptyAssistants } from "../models/message-rules.js";
import { chatRequestSchema, effectiveParameters, InvalidRequest, parseModelSuffix } from "../models/request.js";
import { characterBySlug } from "./characters.js";
import type { FaultOptions, StreamErrorFault } from "../faults.js";
import {
  EmulatorHttpError,
  type Caller,
  type EmulatorContext,
  type EmulatorRequest,
  type EmulatorResponse,
  type RouteSpec,
} from "../types.js";

/** What the chat route remembers per emulator instance. */
interface ChatState {
  /** signs reasoning details; never leaves the process */
  secret: Uint8Array;
  cache: PromptCache;
  /** tool call ids issued together with signed reasoning (bounded, oldest dropped first) */
  signedToolCalls: Set<string>;
  /** streams answered `model_overloaded` so far (`chat.overloadedStreams`) */
  overloadedServed: number;
  /** streams failed by `faults.streamErrors` since these faults were set (`setFaults` starts a new count) */
  streamErrors: { of?: FaultOptions; served: number };
}

/** `modelId` of the web-search add-on's CHARGE row (the model's row carries the model's id) */
export const WEB_SEARCH_ADD_ON_ID = "web-search";

const MAX_SIGNED_IDS = 100_000;
const states = new WeakMap<EmulatorContext, ChatState>();

function stateOf(ctx: EmulatorContext): ChatState {
  let state = states.get(ctx);
  if (!state) {
    state = {
      secret: randomBytes(32),
      cache: new PromptCache(),
      signedToolCalls: new Set(),
      overloadedServed: 0,
      streamErrors: { served: 0 },
    };
    states.set(ctx, state);
  }
  return state;
}

/** 400 DetailedError `{error, details}` (published), plus the zod `issues` live bodies carry. */
function badRequest(error: string, details: unknown, issues?: unknown[]): EmulatorHttpError {
  return new EmulatorHttpError(400, { error, details, ...(issues ? { issues } : {}) });
}

/**
 * `{"messages.2.thought_signature": "reason"}` -> the published `details` shape, zod's formatted error:
 * `{_errors: [], messages: {_errors: [], 2: {_errors: [], thought_signature: {_errors: ["reason"]}}}}`.
 */
function formattedDetails(details: unknown): unknown {
  if (!details || typeof details !== "object" || Array.isArray(details)) return { _errors: [String(details)] };
  const root: Record<string, unknown> = { _errors: [] };
  for (const [path, reason] of Object.entries(details as Record<string, unknown>)) {
    let node = root;
    for (const key of path.split(".")) {
      node[key] ??= { _errors: [] };
      node = node[key] as Record<string, unknown>;
    }
    (node._errors as unknown[]).push(typeof reason === "string" ? reason : JSON.stringify(reason));
  }
  return root;
}

/** The `faults.streamErrors` fault this stream is to end with, if any (counted). */
function nextStreamError(state: ChatState, faults: FaultOptions | undefined): StreamErrorFault | undefined {
  if (state.streamErrors.of !== faults) state.streamErrors = { of: faults, served: 0 };
  const fault = faults?.streamErrors;
  if (!fault || state.streamErrors.served >= fault.first) return undefined;
  state.streamErrors.served++;
  return fault;
}

function callerId(caller: Caller): string {
  return caller.kind === "anonymous" ? "anonymous" : `${caller.account.kind}:${caller.account.id}`;
}

export async function handleChatCompletion(req: EmulatorRequest, ctx: EmulatorContext, caller: Caller): Promise<EmulatorResponse> {
  const names = ctx.names;
  let json: unknown;
  try {
    json = JSON.parse(req.body.toString("utf8"));
  } catch {
    throw badRequest("Invalid request", { _errors: ["Body is not valid JSON"] });
  }
  const behaviour = chatBehaviour(ctx.options);
  const parsed = chatRequestSchema(names, behaviour.liveRequest).safeParse(json);
  if (!parsed.success) throw badRequest("Invalid request", z.formatError(parsed.error), parsed.error.issues);
  const request = parsed.data;
  const state = stateOf(ctx);
  // live: the per-message media caps and base64 audio, before anything else is looked at
  const ruleIssues = behaviour.messageRules ? messageRuleIssues(request.messages) : [];
  if (ruleIssues.length) {
    throw badRequest(
      "Invalid request parameters",
      formattedDetails(Object.fromEntries(ruleIssues.map((i) => [i.path.join("."), i.message]))),
      ruleIssues,
    );
  }

  try {
    const { id: modelId, overrides } = parseModelSuffix(request.model, names);
    const model = findModel(modelId);
    if (!model) throw badRequest(`Specified model not found: ${modelId}`, formattedDetails({ model: "Model not found; see GET /models" }));
    // live: an offline model is a 503, a region-restricted one a 403 (../models/availability.ts)
    const unavailable = modelGatesOn(ctx.options) ? availabilityRefusal(model) : undefined;
    if (unavailable) return { ...unavailable, meta: { modelId: model.id } };
    // live: what the model lacks is refused before inference, and counted in the unsupported-feature budget
    const gated = behaviour.capabilityGates ? [...capabilityIssues(request, model), ...parameterIssues(request, model)] : [];
    if (gated.length) {
      const details = formattedDetails(Object.fromEntries(gated.map((i) => [i.path.join("."), i.message])));
      return {
        status: 400,
        body: { error: "Invalid request parameters", details, issues: gated },
        meta: { modelId: model.id, unsupportedFeature: true },
      };
    }
    const bodyParameters = (parsed.data as Record<string, unknown>)[names.parameters] as Record<string, unknown> | null | undefined;
    const params = effectiveParameters(bodyParameters, overrides, names, model.capabilities.supportsE2EE);
    // a character's system prompt goes first (an E2EE request skips it, as the live service does); an unknown one is 404
    // live: an assistant message with neither content nor tool calls is dropped silently
    let messages = behaviour.messageRules ? withoutEmptyAssistants(request.messages) : request.messages;
    if (params.character_slug !== undefined) {
      const persona = characterBySlug(params.character_slug);
      if (!persona) throw new EmulatorHttpError(404, { error: "No character could be found from the provided character_slug" });
      if (!params.enable_e2ee) messages = [{ role: "system", content: persona.systemPrompt }, ...messages] as typeof messages;
    }
    const id = `chatcmpl-${randomUUID().replace(/-/g, "")}`;
    const plan = planCompletion({
      request: { ...request, messages },
      model,
      params,
      names,
      secret: state.secret,
      responseId: id,
      isSignedToolCall: (callId) => state.signedToolCalls.has(callId),
      behaviour,
    });
    const stream = request.stream === true;
    const created = Math.floor(ctx.now() / 1000);
    const retryAfter = behaviour.overloadedRetryAfterSeconds;
    if (stream && state.overloadedServed < behaviour.overloadedStreams) {
      state.overloadedServed++;
      return {
        status: 200,
        headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" },
        stream: overloadedStream({ id, created, model: model.id, retryAfterSeconds: retryAfter }),
        meta: { modelId: model.id, failed: true },
      };
    }
    const fault = stream ? nextStreamError(state, ctx.options.faults) : undefined;
    const faultEvent = fault ? inBandEventOf(fault, retryAfter) : undefined;
    if (fault && !fault.afterContent) {
      return {
        status: 200,
        headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" },
        stream: failedStream({ id, created, model: model.id, event: faultEvent }),
        meta: { modelId: model.id, failed: true },
      };
    }
    // after content: the plan fails as a directive's would, with the fault's event
    if (fault) plan.failure ??= "upstream_error";
    if (plan.failure === "model_overloaded" && !stream) {
      return {
        status: 429,
        headers: { "retry-after": String(Math.ceil(retryAfter)) },
        body: { error: "The model is currently overloaded. Please try again later." },
        meta: { modelId: model.id, failed: true },
      };
    }
    if (plan.failure && !stream) {
      return { status: 500, body: { error: "Emulated upstream error" }, meta: { modelId: model.id, failed: true } };
    }

    const cache = state.cache.lookupAndStore(callerId(caller), request.prompt_cache_key ?? undefined, plan.promptBlocks);
    const usage = usageOf(plan, cache);
    for (const callId of plan.signedToolCallIds) {
      if (state.signedToolCalls.size >= MAX_SIGNED_IDS) {
        const oldest = state.signedToolCalls.values().next().value;
        if (oldest !== undefined) state.signedToolCalls.delete(oldest);
      }
      state.signedToolCalls.add(callId);
    }

    const modelUsd = costUsd(model, usage);
    let cost = { usd: modelUsd + (plan.webSearched ? WEB_SEARCH_FEE_USD : 0), diem: 0 };
    const account = caller.kind === "anonymous" ? undefined : caller.account;
    if (account && (!plan.failure || behaviour.refundFailedStreams)) {
      const charges = [ctx.ledger.charge(account, modelUsd, { kind: "chat", modelId: model.id, requestId: id })];
      if (plan.webSearched)
        charges.push(ctx.ledger.charge(account, WEB_SEARCH_FEE_USD, { kind: "chat", modelId: WEB_SEARCH_ADD_ON_ID, requestId: id }));
      cost = {
        usd: Math.round(charges.reduce((sum, c) => sum + c.usd, 0) * 1e6) / 1e6,
        diem: Math.round(charges.reduce((sum, c) => sum + c.diem, 0) * 1e6) / 1e6,
      };
    }

    const render = {
      id,
      created,
      usage,
      cost,
      names,
      logprobs: request.logprobs === true,
      topLogprobs: request.top_logprobs ?? 0,
      behaviour,
      // the request was charged before the first byte: its failure gives the charges back
      onFailure: account && plan.failure ? () => void ctx.ledger.refund(account, id) : undefined,
      failureEvent: faultEvent,
    };
    const meta = { tokens: usage.total_tokens, modelId: model.id, ...(plan.failure ? { failed: true } : {}) };
    if (stream) {
      return {
        status: 200,
        headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" },
        stream: streamCompletion(plan, render),
        meta,
      };
    }
    return { status: 200, body: renderCompletion(plan, render), meta };
  } catch (err) {
    if (err instanceof InvalidRequest) throw badRequest(err.message, formattedDetails(err.details), err.issues);
    throw err;
  }
}

export const chatRoutes = {
  completions: { auth: "required", inference: true, handler: handleChatCompletion },
} satisfies Record<string, RouteSpec>;
