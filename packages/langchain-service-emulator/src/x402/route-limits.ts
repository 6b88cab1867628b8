/**
 * The x402 routes' own limits, as the live service enforces them: `POST /x402/top-up` per IP, `GET
 * /x402/balance/:wallet` and `GET /x402/transactions/:wallet` per wallet, each a number of requests in a rolling
 * window (stricter than a fixed one: a client must keep any window of that length under the limit). Over it:
 * `429 {error: "Rate limit exceeded. Please try again later."}` with no rate-limit header (`meta.ownLimit`: the
 * pipeline adds none of its own either). Every request the route handles counts, signed in or not.
 */
import type { EmulatorRequest, EmulatorResponse } from "../types.js";
import type { RouteLimitSettings, X402Behaviour } from "./options.js";

export const ROUTE_LIMIT_MESSAGE = "Rate limit exceeded. Please try again later.";

type LimitedRoute = "topUp" | "balance" | "transactions";

export class RouteLimits {
  /** key -> times of the requests in the window, oldest first */
  readonly #seen = new Map<string, number[]>();

  constructor(
    readonly behaviour: X402Behaviour,
    readonly now: () => number,
  ) {}

  /** Counts the request; its 429 when the route's window is already full (then it is not counted). */
  admit(route: LimitedRoute, req: EmulatorRequest): EmulatorResponse | undefined {
    const limits: RouteLimitSettings | undefined = this.behaviour.routeLimits;
    if (!limits) return undefined;
    const who = route === "topUp" ? `ip:${req.remoteAddress ?? "unknown"}` : walletKey(req.params.wallet ?? "");
    const key = `${route}|${who}`;
    const now = this.now();
    const times = (this.#seen.get(key) ?? []).filter((t) => t > now - limits.windowMs);
    if (times.length >= limits[route]) {
      this.#seen.set(key, times);
      return { status: 429, body: { error: ROUTE_LIMIT_MESSAGE }, meta: { ownLimit: true } };
    }
    times.push(now);
    this.#seen.set(key, times);
    if (this.#seen.size > 10_000) this.#sweep(now, limits.windowMs);
    return undefined;
  }

  #sweep(now: number, windowMs: number): void {
    for (const [k, times] of this.#seen) if ((times.at(-1) ?? 0) <= now - windowMs) this.#seen.delete(k);
  }
}

/** EVM addresses are case-insensitive; Solana's base58 is not. */
function walletKey(wallet: string): string {
  return wallet.startsWith("0x") ? wallet.toLowerCase() : wallet;
}
