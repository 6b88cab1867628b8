/**
 * What a 429 means. The service answers 429 for four kinds of reason, and each wants its own reaction:
 * - `in-flight`: too many requests in flight (a wallet's 6th: `X402_CONCURRENCY_LIMIT`; crypto RPC's second at
 *   once: "Another request for this user is in flight"). The request never ran: wait for a place and re-send; it
 *   is not a failure, and it says nothing about the rate windows.
 * - `overloaded`: the model is overloaded ("The model is currently overloaded…", `Retry-After`, default 30 s):
 *   wait what it says and retry, within the retry budget.
 * - `abuse`: the caller is blocked after too many failures ("Too many failed attempts…"): a re-send within the
 *   block is refused again.
 * - `rate`: a request or token limit ("Rate limit exceeded", `x-ratelimit-*`), or a per-route limiter without
 *   headers (`/x402/*`, the crypto RPC proxy's per-minute cap): wait for the reset it names (or a backoff step), once.
 *
 * The transport reads a 429's (small) body once and marks the response, so the layers outside it (the abuse
 * guard, pacing, retries, the errors layer) all read the same answer without reading the body again.
 */

export type TooManyKind = "in-flight" | "overloaded" | "abuse" | "rate";

const IN_FLIGHT = /X402_CONCURRENCY_LIMIT|another request for this user is in flight/i;
const OVERLOADED = /overloaded/i;
export const ABUSE_BLOCK_MARK = "Too many failed attempts";

/** What a 429 answer's body says. */
export function classify429(text: string): TooManyKind {
  if (IN_FLIGHT.test(text)) return "in-flight";
  if (text.includes(ABUSE_BLOCK_MARK)) return "abuse";
  if (OVERLOADED.test(text)) return "overloaded";
  return "rate";
}

const kinds = new WeakMap<Response, TooManyKind>();

/** The kind of a 429 the transport read (undefined for another status, or a response from outside the stack). */
export function tooManyKind(response: Response | undefined): TooManyKind | undefined {
  return response ? kinds.get(response) : undefined;
}

/** The same answer with its body already read as `text` (and `headers` instead of its own, when given). */
export function answerWithText(response: Response, text: string, headers: Headers = response.headers): Response {
  const out = new Response(text, { status: response.status, statusText: response.statusText, headers });
  if (response.url) Object.defineProperty(out, "url", { value: response.url });
  return out;
}

/** Reads a 429's body once, marks the answer with its kind, and hands back an equivalent response. */
export async function mark429(response: Response): Promise<Response> {
  const text = await response.text().catch(() => "");
  const out = answerWithText(response, text);
  kinds.set(out, classify429(text));
  return out;
}

/** Whether a non-success answer counts as a failure toward the abuse block: every one but "too many in flight". */
export function countsAsFailure(response: Response): boolean {
  return !response.ok && kinds.get(response) !== "in-flight";
}
