/**
 * The live service's rules on chat messages beyond the schema (its chat guide), on with `chat.messageRules`
 * (live default): at most 10 `image_url`, 5 `input_audio`, 3 `video_url` and 5 `file` parts per message and 3
 * `video_url` parts per request (a 400 with `issues[]`, checked before any URL is fetched); audio only as inline
 * base64; an assistant message with neither content nor tool calls dropped silently. Media outside `user`
 * messages is already refused by the request schema (./request.ts).
 */
import type { ChatMessage } from "./request.js";

const PER_MESSAGE: Readonly<Record<string, number>> = { image_url: 10, input_audio: 5, video_url: 3, file: 5 };
const VIDEOS_PER_REQUEST = 3;

export interface MessageIssue {
  code: string;
  path: (string | number)[];
  message: string;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The issues of a request's messages under the live rules; empty when it passes. */
export function messageRuleIssues(messages: readonly ChatMessage[]): MessageIssue[] {
  const issues: MessageIssue[] = [];
  let videos = 0;
  messages.forEach((m, i) => {
    if (m.role !== "user" || !Array.isArray(m.content)) return;
    const counts: Record<string, number> = {};
    m.content.forEach((part, j) => {
      const type = part.type;
      if (!(type in PER_MESSAGE)) return;
      counts[type] = (counts[type] ?? 0) + 1;
      if (type === "video_url") videos++;
      if (type === "input_audio") {
        const data = (part as { input_audio: { data: string } }).input_audio.data;
        if (!(BASE64.test(data) && data.length % 4 !== 1)) {
          issues.push({
            code: "custom",
            path: ["messages", i, "content", j, "input_audio", "data"],
            message: "Audio data must be base64-encoded; URLs are not supported",
          });
        }
      }
    });
    for (const [type, count] of Object.entries(counts)) {
      const cap = PER_MESSAGE[type]!;
      if (count > cap)
        issues.push({
          code: "too_big",
          path: ["messages", i, "content"],
          message: `At most ${cap} ${type} parts are allowed per message (got ${count})`,
        });
    }
  });
  if (videos > VIDEOS_PER_REQUEST) {
    issues.push({
      code: "too_big",
      path: ["messages"],
      message: `At most ${VIDEOS_PER_REQUEST} video_url parts are allowed per request (got ${videos})`,
    });
  }
  return issues;
}

function isEmptyAssistant(m: ChatMessage): boolean {
  if (m.role !== "assistant") return false;
  const content = m.content;
  const hasContent = typeof content === "string" ? content !== "" : Array.isArray(content) && content.length > 0;
  return !hasContent && !(Array.isArray(m.tool_calls) && m.tool_calls.length > 0);
}

/** The messages without assistant messages that have neither content nor tool calls (dropped silently). */
export function withoutEmptyAssistants<T extends ChatMessage>(messages: readonly T[]): T[] {
  return messages.some(isEmptyAssistant) ? messages.filter((m) => !isEmptyAssistant(m)) : [...messages];
}
