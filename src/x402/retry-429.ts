/**
 * The x402 routes' own limits as a client meets them: `POST /x402/top-up` 10 a minute per IP, `/x402/balance` 30
 * and `/x402/transactions` 20 a minute per wallet, each answered over the limit with `429 {error: "Rate limit
 * exceeded. Please try again later."}` and no rate-limit header to say when. The pacing layer keeps this process
 * (and, with a fleet store, the fleet) under them; a 429 that comes anyway (another client behind the same
 * address) is waited out here, growing waits, and the same request re-sent while time allows: for a top-up, a
 * 429 is never a payment failure.
 */
import type { FetchLike, ServiceRequestInit } from "../http/fetch-stack.js";
import { routeRateLimited429 } from "../http/retry-rules.js";

/** the first wait after a route's 429, doubled after each further one */
export const ROUTE_429_FIRST_WAIT_MS = 1_000;
/** the longest single wait (the routes' windows are a minute long) */
export const ROUTE_429_MAX_WAIT_MS = 15_000;

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The wait after a 429 that followed a wait of `previousMs` (none: the first). */
export function nextRouteWait(previousMs?: number): number {
  return previousMs === undefined ? ROUTE_429_FIRST_WAIT_MS : Math.min(previousMs * 2, ROUTE_429_MAX_WAIT_MS);
}

/**
 * Sends, and while the answer is a 429 and the next wait still ends before `untilMs` (ms since epoch), waits and
 * sends the same request again. The last answer is returned whatever it is (a 429 once time is up). A loop of its
 * own, not the stack's retries: a route's 429 names no reset, and a top-up is sent with the stack's retries off.
 */
export async function sendWaitingOut429(send: FetchLike, url: string, init: ServiceRequestInit, untilMs: number): Promise<Response> {
  let wait: number | undefined;
  for (;;) {
    const res = await send(url, init);
    if (!routeRateLimited429(res.status)) return res;
    wait = nextRouteWait(wait);
    if (Date.now() + wait > untilMs) return res;
    await res.body?.cancel().catch(() => undefined);
    await sleep(wait);
  }
}
