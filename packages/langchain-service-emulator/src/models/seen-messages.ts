/** Messages as the model "sees" them: their text (files decoded), media token counts, cache marks and tool calls. */
import type { ChatMessage } from "./request.js";

export const MEDIA_TOKENS = { image_url: 85, input_audio: 100, video_url: 200 } as const;

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

export interface SeenMessage {
  role: ChatMessage["role"];
  text: string;
  mediaTokens: number;
  hasImage: boolean;
  cacheControl: boolean;
}

export function seeMessage(message: ChatMessage): SeenMessage {
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

export function toolCallsOf(message: ChatMessage): { id: string; name: string; arguments: string }[] {
  if (message.role !== "assistant" || !message.tool_calls) return [];
  return message.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
}
