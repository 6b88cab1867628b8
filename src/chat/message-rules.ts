/**
 * Messages the live service drops or refuses, refused here before anything is sent (no request, no reservation,
 * no payment), each a `MessageRefusedError` naming the message (its index in the caller's list) and the rule:
 *
 * - an assistant message with neither content nor tool calls: the service drops it silently. Refused rather than
 *   dropped here too: the model would then answer another conversation than the one given (two user turns run
 *   together, a reasoning turn lost) and bill for it, and only the caller knows whether that is fine; dropping it
 *   on purpose is one `filterMessages` / `RemoveMessage` away, while a silent drop can never be noticed.
 * - media parts (`image_url`, `input_audio`, `video_url`, `file`) outside `user` messages;
 * - more than 10 images, 5 audio, 3 video or 5 file parts in one message, more than 3 videos in one request;
 * - audio that is not inline base64 (the service takes no audio URL).
 */
import { ValidationError, type ServiceErrorInit } from "../http/errors.js";

/** The service's per-message caps on media parts, by wire part type. */
export const MEDIA_PART_CAPS: Readonly<Record<string, number>> = Object.freeze({ image_url: 10, input_audio: 5, video_url: 3, file: 5 });
/** The service's cap on `video_url` parts in one request. */
export const MAX_VIDEO_PARTS_PER_REQUEST = 3;

export type MessageRule = "empty_assistant" | "media_outside_user" | "too_many_parts" | "audio_not_base64";

/** A message the service would drop or refuse, refused before sending. */
export class MessageRefusedError extends ValidationError {
  override name = "MessageRefusedError";
  /** the message's index in the list given to the model */
  readonly messageIndex: number;
  readonly rule: MessageRule;
  /** the part type a cap or rule is about (`image_url`, `input_audio`, ...) */
  readonly partType?: string;
  /** the cap that was passed */
  readonly limit?: number;
  constructor(message: string, init: ServiceErrorInit & { messageIndex: number; rule: MessageRule; partType?: string; limit?: number }) {
    super(message, { ...init, code: init.code ?? init.rule });
    this.messageIndex = init.messageIndex;
    this.rule = init.rule;
    this.partType = init.partType;
    this.limit = init.limit;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), messageIndex: this.messageIndex, rule: this.rule, partType: this.partType, limit: this.limit };
  }
}

/** wire media part types, and the LangChain block types that would reach the wire unconverted */
const MEDIA_TYPES: ReadonlySet<string> = new Set(["image_url", "input_audio", "video_url", "file", "image", "audio", "video"]);

/** Standard base64 (padding optional): what the service takes as `input_audio.data`. */
export function isBase64(data: unknown): boolean {
  if (typeof data !== "string") return false;
  const body = data.endsWith("==") ? data.slice(0, -2) : data.endsWith("=") ? data.slice(0, -1) : data;
  return body.length > 0 && body.length % 4 !== 1 && /^[A-Za-z0-9+/]+$/.test(body);
}

function hasText(content: unknown): boolean {
  if (typeof content === "string") return content !== "";
  if (!Array.isArray(content)) return false;
  return content.some(
    (p) => p && typeof p === "object" && ((p as { type?: unknown }).type !== "text" || (p as { text?: unknown }).text !== ""),
  );
}

/** Counts the request's videos across messages. */
export interface MessageTally {
  videos: number;
}

/**
 * Checks the wire params of one caller message (`index` in the caller's list); throws `MessageRefusedError`.
 * `tally` carries the request-wide counts from one message to the next.
 */
export function checkMessageParams(params: ReadonlyArray<Record<string, unknown>>, index: number, tally: MessageTally): void {
  for (const p of params) {
    const role = String(p.role);
    const at = `messages[${index}] (${role})`;
    if (role === "assistant") {
      const calls = p.tool_calls;
      if (!hasText(p.content) && !(Array.isArray(calls) && calls.length > 0)) {
        throw new MessageRefusedError(
          `${at} has neither content nor tool calls: the service drops such a message silently, so the model would answer another conversation; remove it (filterMessages, RemoveMessage) or give it content`,
          { messageIndex: index, rule: "empty_assistant" },
        );
      }
    }
    if (!Array.isArray(p.content)) continue;
    const counts: Record<string, number> = {};
    for (const part of p.content as Array<Record<string, unknown> | null>) {
      const type = part && typeof part === "object" ? String(part.type) : "";
      if (!MEDIA_TYPES.has(type)) continue;
      if (role !== "user") {
        throw new MessageRefusedError(`${at} carries a ${type} part: the service takes media only in user messages`, {
          messageIndex: index,
          rule: "media_outside_user",
          partType: type,
        });
      }
      const audioUrl = type === "audio" && (typeof part!.url === "string" || part!.source_type === "url");
      const audioData = type === "input_audio" ? (part!.input_audio as { data?: unknown } | undefined)?.data : undefined;
      if (audioUrl || (type === "input_audio" && !isBase64(audioData))) {
        throw new MessageRefusedError(`${at} has audio that is not inline base64: the service takes no audio URL, only base64 data`, {
          messageIndex: index,
          rule: "audio_not_base64",
          partType: type,
        });
      }
      const wireType = type === "image" ? "image_url" : type === "audio" ? "input_audio" : type === "video" ? "video_url" : type;
      const count = (counts[wireType] = (counts[wireType] ?? 0) + 1);
      const cap = MEDIA_PART_CAPS[wireType]!;
      if (count > cap) {
        throw new MessageRefusedError(`${at} has more than ${cap} ${wireType} parts: the service takes at most ${cap} per message`, {
          messageIndex: index,
          rule: "too_many_parts",
          partType: wireType,
          limit: cap,
        });
      }
      if (wireType === "video_url" && ++tally.videos > MAX_VIDEO_PARTS_PER_REQUEST) {
        throw new MessageRefusedError(
          `${at} brings the request to more than ${MAX_VIDEO_PARTS_PER_REQUEST} video_url parts: the service takes at most ${MAX_VIDEO_PARTS_PER_REQUEST} per request`,
          { messageIndex: index, rule: "too_many_parts", partType: wireType, limit: MAX_VIDEO_PARTS_PER_REQUEST },
        );
      }
    }
  }
}
