/**
 * Redirects of credentialed requests, followed by hand.
 *
 * fetch (undici, browsers) strips only `Authorization` when a redirect crosses origins: a wallet's
 * `SIGN-IN-WITH-X` and a top-up's `PAYMENT-SIGNATURE` would reach the other host. So a request that carries any
 * credential or payment header goes out with `redirect: "manual"`, and here:
 * - a redirect within the service's origin is followed (fetch's method rules, at most 5 hops), signed afresh
 *   (a SIWX header is single use); a payment header goes along only while method and body are kept (307/308),
 *   since it was signed for that request;
 * - a redirect to another origin is refused with `RedirectError`, and nothing is sent there. Refused rather
 *   than followed bare: the other host's answer would be taken for the service's (a completion an agent acts
 *   on, a 402 to pay), and an API never needs to send its callers elsewhere.
 * A request without credentials follows redirects as fetch does.
 */
import { RedirectError } from "./errors.js";
import type { FetchLike, ServiceRequestInit } from "./types.js";

/** True when `url` lies on `origin` (a fast prefix check, with a parsed comparison as the fallback). */
export function sameOrigin(url: string, origin: string): boolean {
  if (url.startsWith(origin)) {
    const c = url.charCodeAt(origin.length);
    // end, "/", "?" or "#": not a longer host or port ("http://h:80" vs "http://h:8080")
    if (Number.isNaN(c) || c === 47 || c === 63 || c === 35) return true;
  }
  try {
    return new URL(url).origin === origin;
  } catch {
    return false;
  }
}

/** Headers that carry a credential or money: never sent beyond the service's origin. */
export const CREDENTIAL_HEADERS = ["authorization", "sign-in-with-x", "x-sign-in-with-x"] as const;
export const PAYMENT_HEADERS = ["payment-signature", "x-payment", "x-402-payment"] as const;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const BODY_HEADERS = ["content-type", "content-length", "content-encoding", "content-language", "content-location"];
export const MAX_REDIRECTS = 5;

export function carriesCredentials(headers: Headers): boolean {
  for (const h of CREDENTIAL_HEADERS) if (headers.has(h)) return true;
  for (const h of PAYMENT_HEADERS) if (headers.has(h)) return true;
  return false;
}

/**
 * Sends one request; when it carries credentials, follows redirects by the rules above.
 * `sign(url)` gives fresh credential headers for a hop (none: the headers are kept as they are).
 */
export async function sendFollowingSafely(
  send: FetchLike,
  url: string,
  init: ServiceRequestInit & { headers: Headers },
  origin: string,
  sign?: (url: string) => Promise<Record<string, string> | undefined>,
): Promise<Response> {
  if (!carriesCredentials(init.headers)) return send(url, init);
  const wanted = init.redirect ?? "follow";
  let hopUrl = url;
  let hopInit: ServiceRequestInit & { headers: Headers } = { ...init, redirect: "manual" };
  for (let hop = 0; ; hop++) {
    const response = await send(hopUrl, hopInit);
    // a browser hides a manual redirect's target: it cannot be checked, so it is not followed
    if (response.type === "opaqueredirect") {
      throw new RedirectError("the service answered a credentialed request with a redirect this runtime hides: not followed");
    }
    if (!REDIRECT_STATUSES.has(response.status) || wanted === "manual") return response;
    const location = response.headers.get("location");
    if (location === null) return response;
    await response.body?.cancel().catch(() => undefined);
    let target: URL;
    try {
      target = new URL(location, hopUrl);
    } catch {
      throw new RedirectError(`the service redirected to an invalid location (HTTP ${response.status})`, { status: response.status });
    }
    if (wanted === "error") {
      throw new RedirectError(`HTTP ${response.status} redirect with redirect: "error"`, {
        status: response.status,
        targetOrigin: target.origin,
      });
    }
    if (target.origin !== origin) {
      throw new RedirectError(
        `the service redirected a credentialed request to another origin (HTTP ${response.status} to ${target.origin}): refused, nothing was sent there`,
        { status: response.status, targetOrigin: target.origin },
      );
    }
    if (hop >= MAX_REDIRECTS) {
      throw new RedirectError(`more than ${MAX_REDIRECTS} redirects (HTTP ${response.status})`, {
        status: response.status,
        targetOrigin: target.origin,
      });
    }
    const headers = new Headers(hopInit.headers);
    let method = (hopInit.method ?? "GET").toUpperCase();
    let body = hopInit.body;
    // fetch's rules: 303 turns anything but GET/HEAD into a body-less GET, and so do 301/302 after a POST
    if (
      (response.status === 303 && method !== "GET" && method !== "HEAD") ||
      ((response.status === 301 || response.status === 302) && method === "POST")
    ) {
      method = "GET";
      body = undefined;
      for (const h of BODY_HEADERS) headers.delete(h);
      for (const h of PAYMENT_HEADERS) headers.delete(h);
    } else if (body && typeof (body as ReadableStream).getReader === "function") {
      throw new RedirectError(`HTTP ${response.status} redirect of a streamed body, which cannot be sent twice`, {
        status: response.status,
      });
    }
    const fresh = sign ? await sign(target.href) : undefined;
    if (fresh) for (const k in fresh) headers.set(k, fresh[k]!);
    hopUrl = target.href;
    hopInit = { ...hopInit, method, body, headers };
  }
}
