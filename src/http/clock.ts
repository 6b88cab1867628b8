/**
 * The service's clock as seen from here. A wallet sign-in (SIWX) carries `issuedAt`, which the service checks
 * against its own clock, so a machine whose clock runs ahead is refused. Every response's `Date` header tells how
 * far this machine's clock is from the service's; sign-ins use the corrected time.
 *
 * One offset per origin, shared in the process (one machine, one service clock), from the latest response.
 * `Date` has 1 s resolution and is stamped before the response leaves, so `date - receivedAt` never exceeds the
 * true offset: the corrected clock is at most about a second behind the service's, never ahead of it.
 */
import { LruMap } from "./bounded.js";

/** a `Date` further off than this is not believed (a broken or hostile server): the local clock is kept */
export const MAX_CLOCK_OFFSET_MS = 24 * 3_600_000;
/**
 * A refused sign-in is signed again (once) when the offset it was signed with and the one its response shows
 * differ by this much: more than the `Date` header's own 1 s resolution plus some latency.
 */
export const CLOCK_RETRY_MS = 2_000;

/**
 * origins whose offset is remembered (least recently used forgotten first): a process talks to a handful; one
 * forgotten costs at most one refused sign-in, signed again on the service's time (CLOCK_RETRY_MS)
 */
const MAX_ORIGINS = 1_000;

export class ServiceClock {
  readonly #offsets = new LruMap<string, number>(MAX_ORIGINS);
  readonly #localNow: () => number;

  constructor(localNow: () => number = Date.now) {
    this.#localNow = localNow;
  }

  /** ms to add to the local clock to get the service's (0 until a response was seen) */
  offset(origin: string): number {
    return this.#offsets.get(origin) ?? 0;
  }

  /** the service's time for a request to `url` (any URL on its origin) */
  now(url: string): number {
    return this.#localNow() + this.offset(originOf(url));
  }

  /** Learns from a response's `Date` header; returns the offset now in force. */
  observe(origin: string, date: string | null | undefined, receivedAt: number = this.#localNow()): number {
    const serverTime = date ? Date.parse(date) : NaN;
    const offset = serverTime - receivedAt;
    if (Number.isFinite(offset) && Math.abs(offset) <= MAX_CLOCK_OFFSET_MS) this.#offsets.set(origin, offset);
    return this.offset(origin);
  }
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}
