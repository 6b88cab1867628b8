/**
 * The service's own limits on its wallet routes. They are enforced with a 429 (`{error: "Rate limit exceeded.
 * Please try again later."}`) that carries no rate-limit header, so nothing can be learned from answers: the
 * published figures are paced instead, by the pacing layer, as rolling windows:
 * - `POST /x402/top-up`: 10 a minute per IP. Keyed by the service's origin: every wallet of a process (and, with a
 *   fleet store, every process of the fleet) shares its address;
 * - `GET /x402/balance/{wallet}`: 30 a minute per wallet, and `GET /x402/transactions/{wallet}`: 20, keyed by
 *   the wallet in the path (every client of the wallet shares one window, whoever it signs in as).
 * In the process one limiter per key (the type-limit limiter of pacing.ts: a send counts from when it goes until
 * a window after its answer); with a fleet store, also the store's window of the same key, told the limit by each
 * answer (see `routeWindowOf`), so that a fleet behind one address never trips them.
 */
import { ConfigurationError } from "./errors.js";
import type { PaceWindow } from "./shared-limits.js";

export type LimitedRoute = "topUp" | "balance" | "transactions";

/** Requests per minute of each limited route (the live service's published figures). */
export const ROUTE_LIMITS: Readonly<Record<LimitedRoute, number>> = { topUp: 10, balance: 30, transactions: 20 };

/** The limited route of a request URL and the key its window is kept under; undefined for any other URL. */
export function limitedRouteOf(url: string): { route: LimitedRoute; key: string } | undefined {
  if (!url.includes("/x402/")) return undefined; // every other request: no URL parse on the hot path
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const m = /\/x402\/(top-up|balance|transactions)(?:\/([^/]+))?\/?$/.exec(u.pathname);
  if (!m) return undefined;
  if (m[1] === "top-up") return m[2] === undefined ? { route: "topUp", key: `${u.origin}|x402|top-up` } : undefined;
  if (m[2] === undefined) return undefined;
  // EVM addresses are case-insensitive; Solana's base58 is not
  const wallet = m[2].startsWith("0x") ? m[2].toLowerCase() : m[2];
  return { route: m[1] === "balance" ? "balance" : "transactions", key: `${u.origin}|x402|${m[1]}|${wallet}` };
}

/**
 * The window an answer of a limited route tells a fleet store: the limit, at least this send counted (the store
 * does not count the send that probes a key whose limit it does not know yet), and a reset one window after this
 * answer. Every answer pushes the reset on, so the store's window rolls only a window after the last answer it
 * heard of: a send of the next window is then always a window apart from every send of this one that was
 * answered (one still in flight is carried into the next window and counted there), which keeps any rolling
 * window under the limit whatever the service's own windows are.
 */
export function routeWindowOf(limit: number, windowMs: number, now: number): PaceWindow {
  return { limit, remaining: limit - 1, resetAt: now + windowMs };
}

/** `pacing.routeLimits`: false, or requests per window by limited route, each a positive integer. */
export function checkRouteLimits(value: unknown, path: string): void {
  if (value === false) return;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConfigurationError(
      `${path} must be false or an object of routes (${Object.keys(ROUTE_LIMITS).join(", ")}) to requests per window`,
    );
  }
  for (const [route, limit] of Object.entries(value)) {
    if (!(route in ROUTE_LIMITS))
      throw new ConfigurationError(
        `${path} has an unknown route ${JSON.stringify(route)} (one of ${Object.keys(ROUTE_LIMITS).join(", ")})`,
      );
    if (limit !== undefined && !(typeof limit === "number" && Number.isInteger(limit) && limit > 0)) {
      throw new ConfigurationError(`${path}.${route} must be a positive integer (got ${String(limit)})`);
    }
  }
}
