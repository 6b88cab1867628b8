/**
 * A request's tokens, estimated before it is sent, for the token window of the pacing layer (`service.estimatedTokens`):
 * its input, plus the completion's cap when the caller set one. Near a token limit a send whose estimate does not
 * fit waits for the window's reset instead of drawing the 429. No tokenizer: models differ, and the window only
 * needs a bound. English runs about 4 characters a token; a character outside ASCII (CJK, emoji) is counted as a
 * token of its own, so such text is not underestimated fourfold.
 */

/** per message: the role and the separators around it */
const MESSAGE_OVERHEAD = 4;
/** a media part (image, audio, video, file by URL): a flat guess, so that a data URL's size never counts as text */
const MEDIA_PART = 100;

/** The tokens of `text`: a quarter of its ASCII characters, one for each other character. */
export function estimateTextTokens(text: string): number {
  let ascii = 0;
  let other = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 128) ascii++;
    else if (c < 0xdc00 || c > 0xdfff) other++; // a surrogate pair is one character
  }
  return Math.ceil(ascii / 4) + other;
}

function contentTokens(content: unknown): number {
  if (typeof content === "string") return estimateTextTokens(content);
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) {
    const text = (part as { text?: unknown } | null)?.text;
    n += typeof text === "string" ? estimateTextTokens(text) : MEDIA_PART;
  }
  return n;
}

const positive = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) && v > 0 ? v : undefined);

/**
 * A chat completion request's tokens (its JSON body as sent): the messages (text, tool calls), the tool
 * definitions, plus `max_completion_tokens` (else `max_tokens`) per choice when set. Without a cap the completion
 * is unknown: the input alone (the answer's headers tell the rest).
 */
export function estimateChatTokens(body: Record<string, unknown>): number {
  let n = 0;
  if (Array.isArray(body.messages)) {
    for (const m of body.messages as Record<string, unknown>[]) {
      if (!m || typeof m !== "object") continue;
      n += MESSAGE_OVERHEAD + contentTokens(m.content);
      if (m.tool_calls !== undefined) n += estimateTextTokens(JSON.stringify(m.tool_calls));
    }
  }
  if (Array.isArray(body.tools) && body.tools.length > 0) n += estimateTextTokens(JSON.stringify(body.tools));
  const cap = positive(body.max_completion_tokens) ?? positive(body.max_tokens);
  if (cap !== undefined) n += cap * (positive(body.n) ?? 1);
  return n;
}

/** An embeddings request's tokens: its input texts. */
export function estimateEmbeddingTokens(inputs: readonly string[]): number {
  let n = 0;
  for (const text of inputs) n += estimateTextTokens(text);
  return n;
}
