/**
 * Where the emulated chat behaves as the live service (`mode: "live"`, the default) rather than as the seed
 * contract (`mode: "seed"`), each difference with an option of its own that wins over the mode; and the
 * in-band error knobs (`EmulatorOptions.chat`).
 *
 * | behaviour | live | seed |
 * |---|---|---|
 * | citation markers (`citationMarkers`) | `^n^` | `[REF]n[/REF]` |
 * | `return_search_results_as_documents` (`searchDocuments`) | id `web_search_call`, name `web_search`, `finish_reason: "tool_calls"`, streamed before the content | `<brand>_web_search_documents`, streamed after the content |
 * | citations in a stream (`streamSearchResults`) | only with `include_search_results_in_stream`: a `choices: []` chunk at the end | in the closing usage chunk, or first with the flag |
 * | a stream that fails in-band (`refundFailedStreams`) | charged before the first byte, then a `REFUND` row | never charged |
 * | capability gates (`capabilityGates`, ./capabilities.ts) | a 400 with `issues[]` before inference, counted in the unsupported-feature budget | images and `json_schema` refused by the engine as ordinary 400s |
 * | message rules (`messageRules`, ./message-rules.ts) | at most 10 images, 5 audio, 3 video, 5 file parts per message (3 videos per request), audio only base64: a 400 with `issues[]`; an assistant message with neither content nor tool calls dropped silently | none: the engine sees every message |
 * | `anon_user_id`, `reasoning.enabled` | accepted with the live rules | unknown members (400) / passed through |
 *
 * Per-request test directives (./engine.ts) trigger the in-band errors of one answer: `[[emu:error]]`
 * (`upstream_error`), `[[emu:error=model_overloaded]]`, `[[emu:error=content_filter]]`,
 * `[[emu:error=e2ee_attestation_stale]]`, `[[emu:error=api_error]]` (each after the first content chunk, then
 * `[DONE]`), and `[[emu:refuse]]` (`finish_reason: "content_filter"`). `faults.streamErrors` makes the first N
 * streams fail with any `{type, code, param}`, before any content or after it (../faults.ts).
 */
import { ConfigurationError } from "langchain-service";
import type { ChatEmulatorOptions, CitationMarkers, EmulatorOptions } from "../types.js";

export type { ChatEmulatorOptions, CitationMarkers } from "../types.js";

/** The resolved chat behaviour of one emulator. */
export interface ChatBehaviour {
  citationMarkers: CitationMarkers;
  liveSearchDocuments: boolean;
  liveStreamSearchResults: boolean;
  refundFailedStreams: boolean;
  capabilityGates: boolean;
  /** media caps per message and request, base64-only audio, empty assistant messages dropped (./message-rules.ts) */
  messageRules: boolean;
  /** the request schema of the live service (`anon_user_id`, `reasoning.enabled`) */
  liveRequest: boolean;
  overloadedStreams: number;
  overloadedRetryAfterSeconds: number;
}

export const DEFAULT_OVERLOADED_RETRY_AFTER_SECONDS = 1;

export function chatBehaviour(options: Pick<EmulatorOptions, "mode" | "chat">): ChatBehaviour {
  const live = options.mode !== "seed";
  const chat = options.chat ?? {};
  return {
    citationMarkers: chat.citationMarkers ?? (live ? "caret" : "ref"),
    liveSearchDocuments: (chat.searchDocuments ?? (live ? "live" : "seed")) === "live",
    liveStreamSearchResults: (chat.streamSearchResults ?? (live ? "live" : "seed")) === "live",
    refundFailedStreams: chat.refundFailedStreams ?? live,
    capabilityGates: chat.capabilityGates ?? live,
    messageRules: chat.messageRules ?? live,
    liveRequest: live,
    overloadedStreams: chat.overloadedStreams ?? 0,
    overloadedRetryAfterSeconds: chat.overloadedRetryAfterSeconds ?? DEFAULT_OVERLOADED_RETRY_AFTER_SECONDS,
  };
}

/** Throws a ConfigurationError naming the first bad `chat` option (at `startEmulator`). */
export function validateChatOptions(chat: ChatEmulatorOptions | undefined): void {
  if (chat === undefined) return;
  const oneOf = (key: keyof ChatEmulatorOptions, allowed: readonly unknown[]) => {
    const value = chat[key];
    if (value !== undefined && !allowed.includes(value)) {
      throw new ConfigurationError(
        `chat.${key} must be one of ${allowed.map((a) => JSON.stringify(a)).join(", ")} (got ${JSON.stringify(value)})`,
      );
    }
  };
  oneOf("citationMarkers", ["caret", "ref"]);
  oneOf("searchDocuments", ["live", "seed"]);
  oneOf("streamSearchResults", ["live", "seed"]);
  oneOf("refundFailedStreams", [true, false]);
  oneOf("capabilityGates", [true, false]);
  oneOf("messageRules", [true, false]);
  const n = chat.overloadedStreams;
  if (n !== undefined && !(Number.isInteger(n) && n >= 0))
    throw new ConfigurationError(`chat.overloadedStreams must be a non-negative integer (got ${String(n)})`);
  const s = chat.overloadedRetryAfterSeconds;
  if (s !== undefined && !(typeof s === "number" && Number.isFinite(s) && s >= 0)) {
    throw new ConfigurationError(`chat.overloadedRetryAfterSeconds must be a number >= 0 (got ${String(s)})`);
  }
}

/** The in-band errors a stream can end with (each followed by `[DONE]`), as the live service words them. */
export type InBandErrorKind = "upstream_error" | "model_overloaded" | "content_filter" | "e2ee_attestation_stale" | "api_error";

/** The live shape of an in-band error: `{type: "server_error" | "api_error", code, param, message}`. */
export interface InBandErrorSpec {
  code: string;
  type?: string;
  param?: string | null;
  message?: string;
}

/** The type the live service gives each code when a fault names none: outages are `server_error`. */
export function inBandErrorType(code: string): string {
  return code === "model_overloaded" || code === "upstream_error" ? "server_error" : "api_error";
}

/** An in-band error event from its parts (`faults.streamErrors`), with `retry_after` on `model_overloaded`. */
export function inBandEventOf(spec: InBandErrorSpec, retryAfterSeconds: number): { error: Record<string, unknown> } {
  return {
    error: {
      message: spec.message ?? `Emulated in-band error: ${spec.code}`,
      type: spec.type ?? inBandErrorType(spec.code),
      code: spec.code,
      param: spec.param ?? null,
      ...(spec.code === "model_overloaded" ? { retry_after: retryAfterSeconds } : {}),
    },
  };
}

export function inBandErrorEvent(kind: InBandErrorKind, retryAfterSeconds: number): { error: Record<string, unknown> } {
  switch (kind) {
    case "model_overloaded":
      return inBandEventOf({ code: kind, message: "The model is currently overloaded. Please try again later." }, retryAfterSeconds);
    case "content_filter":
      return {
        error: {
          message: "The provider blocked the content of this answer.",
          type: "content_filter_error",
          code: "content_blocked_by_provider",
          param: null,
        },
      };
    case "e2ee_attestation_stale":
      return inBandEventOf(
        { code: kind, message: "The E2EE attestation is stale; fetch a fresh one and encrypt again." },
        retryAfterSeconds,
      );
    case "api_error":
      return inBandEventOf({ code: "provider_error", type: "api_error", message: "The provider returned an error." }, retryAfterSeconds);
    default:
      return inBandEventOf({ code: "upstream_error", message: "Emulated upstream error in the middle of the stream" }, retryAfterSeconds);
  }
}
