/**
 * Signed reasoning details (`emu-reasoner`). Like providers that keep "thought signatures", the emulator signs
 * each turn's reasoning text together with that turn's tool calls (HMAC-SHA256 with a per-server secret) and
 * returns the signature as an opaque `reasoning.encrypted` item. A later request that carries the assistant
 * message back must carry its `reasoning_details` unchanged, or it is rejected with 400.
 *
 * Streaming: details arrive as `delta.reasoning_details` items with an `index`. A client aggregates them the
 * way LangChain's chunk `concat` does: items with the same `index` merge into one, their `text` strings
 * concatenate, and the other fields (type, format, id, data) are sent only once per index.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { canonicalJson } from "./planner.js";

export const REASONING_FORMAT = "emu-v1";

export interface ReasoningDetail {
  type: string;
  text?: string;
  data?: string;
  format?: string;
  index?: number;
  id?: string;
}

export interface SignedToolCall {
  id: string;
  name: string;
  /** the JSON arguments string as sent on the wire */
  arguments: string;
}

function canonicalCalls(calls: readonly SignedToolCall[]): string {
  return canonicalJson(
    calls.map((c) => {
      let args: unknown = c.arguments;
      try {
        args = JSON.parse(c.arguments);
      } catch {
        // unparsable arguments are signed as the raw string
      }
      return { id: c.id, name: c.name, arguments: args };
    }),
  );
}

export function reasoningSignature(secret: Uint8Array, reasoningText: string, toolCalls: readonly SignedToolCall[]): string {
  return createHmac("sha256", secret).update(reasoningText).update("\u0000").update(canonicalCalls(toolCalls)).digest("base64");
}

export function buildReasoningDetails(secret: Uint8Array, reasoningText: string, toolCalls: readonly SignedToolCall[]): ReasoningDetail[] {
  const data = reasoningSignature(secret, reasoningText, toolCalls);
  const id = `rs_${createHmac("sha256", secret).update(data).digest("hex").slice(0, 24)}`;
  return [
    { type: "reasoning.text", text: reasoningText, format: REASONING_FORMAT, index: 0 },
    { type: "reasoning.encrypted", data, format: REASONING_FORMAT, index: 1, id },
  ];
}

export type VerifyResult = { ok: true } | { ok: false; reason: string };

/** Checks that `details` are the ones this server issued for that reasoning and those tool calls. */
export function verifyReasoningDetails(
  secret: Uint8Array,
  details: readonly ReasoningDetail[] | null | undefined,
  toolCalls: readonly SignedToolCall[],
): VerifyResult {
  if (!details || details.length === 0) return { ok: false, reason: "reasoning_details are missing" };
  const signed = details.find((d) => d.type === "reasoning.encrypted" && typeof d.data === "string");
  if (!signed?.data) return { ok: false, reason: "the reasoning.encrypted item is missing" };
  const text = details
    .filter((d) => d.type === "reasoning.text")
    .sort((a, b) => (a.index ?? 0) - (b.index ?? 0))
    .map((d) => d.text ?? "")
    .join("");
  const expected = Buffer.from(reasoningSignature(secret, text, toolCalls), "base64");
  const given = Buffer.from(signed.data, "base64");
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    return { ok: false, reason: "the signature does not match the reasoning text and tool calls" };
  }
  return { ok: true };
}

/**
 * `thought_signature` on the assistant message (where the published description places it: "Gemini thought
 * signature returned by native GCP transport ... pass it back exactly as received"). Opaque to clients:
 * `emu-ts.<payload>.<mac>`, where the payload names the response and choice it was issued for and the MAC
 * covers that payload and the turn's tool calls. So an edited signature, or one moved onto other tool calls,
 * fails verification without the server keeping any state.
 */
const THOUGHT_PREFIX = "emu-ts";

function thoughtMac(secret: Uint8Array, payload: string, toolCalls: readonly SignedToolCall[]): string {
  return createHmac("sha256", secret)
    .update("thought_signature\u0000")
    .update(payload)
    .update("\u0000")
    .update(canonicalCalls(toolCalls))
    .digest("base64url");
}

export function buildThoughtSignature(
  secret: Uint8Array,
  responseId: string,
  choice: number,
  toolCalls: readonly SignedToolCall[],
): string {
  const payload = Buffer.from(JSON.stringify({ r: responseId, c: choice })).toString("base64url");
  return `${THOUGHT_PREFIX}.${payload}.${thoughtMac(secret, payload, toolCalls)}`;
}

/** Checks that `signature` is one this server issued for exactly these tool calls. */
export function verifyThoughtSignature(
  secret: Uint8Array,
  signature: string | null | undefined,
  toolCalls: readonly SignedToolCall[],
): VerifyResult {
  if (typeof signature !== "string" || signature === "") return { ok: false, reason: "thought_signature is missing" };
  const [prefix, payload, mac, ...rest] = signature.split(".");
  if (prefix !== THOUGHT_PREFIX || !payload || !mac || rest.length > 0)
    return { ok: false, reason: "thought_signature is not one this service issued" };
  const expected = Buffer.from(thoughtMac(secret, payload, toolCalls), "base64url");
  const given = Buffer.from(mac, "base64url");
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    return { ok: false, reason: "thought_signature does not match this turn's tool calls" };
  }
  return { ok: true };
}
