/**
 * Fault injection for reliability tests: a share of requests answered 500/503 before any route runs (nothing
 * is charged), added latency, streams cut after k chunks, and answers lost whole after the route ran (charged). Faults can be swapped at run time
 * (`emulator.setFaults`). With a `seed` the sequence of faults is reproducible.
 */

/** Paths never faulted by default: network discovery is what clients call to find their way back. */
const DEFAULT_EXEMPT = ["/crypto/rpc/networks"];

export const FAULT_BODIES: Record<number, { error: string }> = {
  500: { error: "Internal server error" },
  503: { error: "Service unavailable" },
  504: { error: "Gateway timeout" },
};

/** mulberry32: a tiny seeded PRNG (no library needed for reproducible coin flips). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface FaultDecision {
  /** answer with this status instead of serving */
  status?: number;
  /** wait this long before answering */
  latencyMs: number;
}

export class FaultInjector {
  private faults: FaultOptions = {};
  private random: () => number = Math.random;
  /** overloaded answers given since the faults were set */
  private overloads = 0;
  /** answers lost whole since the faults were set */
  private lost = 0;

  constructor(faults: FaultOptions = {}) {
    this.set(faults);
  }

  get current(): FaultOptions {
    return this.faults;
  }

  set(faults: FaultOptions = {}): void {
    const rate = faults.errorRate ?? 0;
    if (!(rate >= 0 && rate <= 1)) throw new RangeError(`faults.errorRate must be within 0..1 (got ${rate})`);
    if (faults.streamCutAfter !== undefined && !(Number.isInteger(faults.streamCutAfter) && faults.streamCutAfter >= 0)) {
      throw new RangeError(`faults.streamCutAfter must be a non-negative integer (got ${faults.streamCutAfter})`);
    }
    const se = faults.streamErrors;
    if (se !== undefined && !(Number.isInteger(se.first) && se.first >= 0 && typeof se.code === "string" && se.code !== "")) {
      throw new RangeError("faults.streamErrors needs `first` (a non-negative integer) and a `code`");
    }
    this.faults = { ...faults };
    this.overloads = 0;
    this.lost = 0;
    this.random = faults.seed !== undefined ? seededRandom(faults.seed) : Math.random;
  }

  applies(path: string): boolean {
    const prefixes = this.faults.paths;
    if (prefixes) return prefixes.some((p) => path.startsWith(p));
    return !DEFAULT_EXEMPT.includes(path);
  }

  decide(path: string): FaultDecision {
    if (!this.applies(path)) return { latencyMs: 0 };
    const latencyMs = this.latency();
    const rate = this.faults.errorRate ?? 0;
    if (rate > 0 && this.random() < rate) {
      const statuses = this.faults.statuses?.length ? this.faults.statuses : [500, 503];
      const status = statuses[Math.floor(this.random() * statuses.length)] ?? 500;
      return { status, latencyMs };
    }
    return { latencyMs };
  }

  /** `Retry-After` seconds when this inference request on `path` is to be answered "overloaded"; else undefined */
  overloaded(path: string): number | undefined {
    const o = this.faults.overload;
    if (!o || !this.applies(path)) return undefined;
    const hit = (o.first !== undefined && this.overloads < o.first) || (o.rate !== undefined && o.rate > 0 && this.random() < o.rate);
    if (!hit) return undefined;
    this.overloads++;
    return o.retryAfterSeconds ?? 30;
  }

  /**
   * Whether this answer on `path` is to be lost whole (`loseAnswers`): the route has run (and charged), then the
   * connection is destroyed before the first byte of its answer. Counts the answers lost so far.
   */
  loseAnswer(path: string): boolean {
    const o = this.faults.loseAnswers;
    if (!o || !this.applies(path)) return false;
    const hit = (o.first !== undefined && this.lost < o.first) || (o.rate !== undefined && o.rate > 0 && this.random() < o.rate);
    if (hit) this.lost++;
    return hit;
  }

  /** chunks after which a stream on `path` is cut, if any */
  streamCutAfter(path: string): number | undefined {
    return this.applies(path) ? this.faults.streamCutAfter : undefined;
  }

  private latency(): number {
    const l = this.faults.latencyMs;
    if (l === undefined) return 0;
    if (typeof l === "number") return Math.max(0, l);
    const [min, max] = l;
    return Math.max(0, min + this.random() * (max - min));
  }
}

export interface FaultOptions {
  /** share of requests answered 500/503 instead of served (0..1); applies to paths matching `paths` */
  errorRate?: number;
  /** statuses to pick from (default [500, 503]) */
  statuses?: number[];
  /** added latency per request in ms (a number or [min, max]) */
  latencyMs?: number | [number, number];
  /** cut every stream after k chunks (the connection is destroyed, no [DONE]) */
  streamCutAfter?: number;
  /** path prefixes the faults apply to (default: all but /crypto/rpc/networks) */
  paths?: string[];
  /** deterministic randomness for faults */
  seed?: number;
  /**
   * An overloaded model: inference requests answered `429` "The model is currently overloaded…" with `Retry-After`
   * (after the rate limits counted them), as the live service does. `first`: the first N such requests; `rate`: a
   * share of them; `retryAfterSeconds` (default 30, the service's default).
   */
  overload?: { first?: number; rate?: number; retryAfterSeconds?: number };
  /**
   * Answers lost whole: the route runs (a queue is charged, a job created), then the connection is destroyed before
   * the first byte of its answer, as when a network drops a reply. `first`: the first N such answers; `rate`: a share.
   * Use with `paths` (e.g. `["/video/queue"]`).
   */
  loseAnswers?: { first?: number; rate?: number };
  /**
   * In-band stream errors, as the live service sends them: the first `first` chat streams end with
   * `data: {"error": {type, code, param, message}}` then `[DONE]`, before any content (uncharged) or, with
   * `afterContent`, after the first content chunk (charged, then refunded live). `code`: `upstream_error`,
   * `model_overloaded` (with `retry_after`: `chat.overloadedRetryAfterSeconds`), `e2ee_attestation_stale` or any
   * other; `type` defaults to `server_error` for the first two and `api_error` for the rest.
   */
  streamErrors?: StreamErrorFault;
}

export interface StreamErrorFault {
  first: number;
  code: string;
  type?: "server_error" | "api_error";
  param?: string;
  message?: string;
  afterContent?: boolean;
}
