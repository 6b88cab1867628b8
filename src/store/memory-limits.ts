/**
 * Pacing windows and abuse-guard windows in one process: the same semantics as the Lua scripts of
 * `redis-limits.ts` (the contract tests run both), each method one synchronous step (no `await`), so atomic on
 * Node's one thread. `MemoryStore` delegates to this. The fetch stack does not route its own limits through a
 * process-local store (its in-process limiters already are shared by the process); this is here so that the
 * store interface means the same thing whichever store is behind it.
 */
import type {
  GuardGrant,
  GuardRelease,
  GuardRequest,
  LimitStore,
  PaceGrant,
  PaceObservation,
  PaceRequest,
  SlotGrant,
  SlotRequest,
} from "../http/shared-limits.js";

/** One key's windows: `r*` requests, `t*` tokens; `*l` limit (undefined: unknown), `*u` used, `*r` reset (0: unknown). */
interface Pace {
  rl?: number;
  ru: number;
  rr: number;
  tl?: number;
  tu: number;
  tr: number;
  /** a probe (the send that learns the limits) holds until then */
  probe: number;
  unmetered: boolean;
  pause: number;
  expires: number;
  /** when the current requests window was rolled (sends granted before it and still in flight were carried into it) */
  ro: number;
  /** sends in flight: id -> when granted */
  flight: Map<string, number>;
}

interface Guard {
  /** failure times, oldest first */
  failures: number[];
  /** in-flight id -> lease deadline */
  flight: Map<string, number>;
  expires: number;
}

/**
 * A window is over `margin` ms after its reset: the next send opens a new one, whose reset an answer will tell.
 * It starts with the sends still in flight counted (they may land in it).
 */
function roll(p: Pace, now: number, margin: number, flightMs: number): void {
  if (p.rr > 0 && now >= p.rr + margin) {
    for (const [id, at] of p.flight) if (at <= now - flightMs) p.flight.delete(id);
    p.ru = p.flight.size;
    p.rr = 0;
    p.ro = now;
  }
  if (p.tr > 0 && now >= p.tr + margin) (p.tu = 0), (p.tr = 0);
}

export class MemoryLimits implements LimitStore {
  readonly #pace = new Map<string, Pace>();
  readonly #guards = new Map<string, Guard>();
  /** requests in flight per key: id -> lease end */
  readonly #slots = new Map<string, Map<string, number>>();
  #calls = 0;

  /** drops expired keys now and then (a tenant seen once is not kept) */
  #sweep(now: number): void {
    if (++this.#calls % 256 !== 0) return;
    for (const [k, v] of this.#pace) if (v.expires <= now) this.#pace.delete(k);
    for (const [k, v] of this.#guards) if (v.expires <= now) this.#guards.delete(k);
    for (const [k, v] of this.#slots) {
      for (const [id, end] of v) if (end <= now) v.delete(id);
      if (v.size === 0) this.#slots.delete(k);
    }
  }

  #paceOf(key: string, now: number): Pace {
    this.#sweep(now);
    let p = this.#pace.get(key);
    if (!p || p.expires <= now)
      this.#pace.set(key, (p = { ru: 0, rr: 0, tu: 0, tr: 0, probe: 0, unmetered: false, pause: 0, expires: 0, ro: 0, flight: new Map() }));
    return p;
  }

  #keep(p: Pace, now: number, ttlMs: number): void {
    p.expires = now + Math.max(ttlMs, p.pause - now + 1000);
  }

  acquirePaceNow(key: string, { now, tokens, marginMs, probeMs, ttlMs, id, flightMs }: PaceRequest): PaceGrant {
    const p = this.#paceOf(key, now);
    if (now < p.pause) return { granted: false, waitMs: Math.ceil(p.pause - now) };
    if (p.unmetered) return { granted: true, waitMs: 0 };
    if (p.rl === undefined) {
      if (p.probe > now) return { granted: false, waitMs: -1 };
      p.probe = now + probeMs;
      this.#keep(p, now, ttlMs);
      return { granted: true, waitMs: 0 };
    }
    roll(p, now, marginMs, flightMs);
    let wait = 0;
    if (p.ru >= p.rl) wait = p.rr > 0 ? Math.ceil(p.rr + marginMs - now) : -1;
    // a send without an estimate still needs a token (none left: it waits too); a request larger than a whole
    // token window can never fit: it goes rather than waits forever
    const need = Math.max(tokens, 1);
    if (p.tl !== undefined && need <= p.tl && p.tu + need > p.tl) {
      const w = p.tr > 0 ? Math.ceil(p.tr + marginMs - now) : -1;
      wait = w < 0 || wait < 0 ? -1 : Math.max(wait, w);
    }
    if (wait === 0) {
      p.ru += 1;
      p.tu += tokens;
      p.flight.set(id, now);
    }
    this.#keep(p, now, ttlMs);
    return { granted: wait === 0, waitMs: wait };
  }

  observePaceNow(key: string, o: PaceObservation): void {
    const { now } = o;
    const p = this.#paceOf(key, now);
    roll(p, now, o.marginMs, o.flightMs);
    p.probe = 0;
    const grantedAt = o.id === undefined ? undefined : p.flight.get(o.id);
    if (o.id !== undefined) p.flight.delete(o.id);
    if (o.pauseUntil !== undefined && o.pauseUntil > p.pause) p.pause = o.pauseUntil;
    const r = o.requests;
    // carried into this window at its roll, but counted by the service in the one before: its place is free
    if (r && grantedAt !== undefined && grantedAt < p.ro && (r.resetAt <= now || (p.rr > 0 && r.resetAt < p.rr)))
      p.ru = Math.max(0, p.ru - 1);
    if (r) {
      p.unmetered = false;
      p.rl = r.limit;
      // an answer of a window already over tells nothing about the current one; one of a later window moves on
      if (r.resetAt > now && (p.rr === 0 || r.resetAt >= p.rr)) {
        p.rr = r.resetAt;
        // the service's count can only be above ours (other callers on the key, or sends before the store knew)
        p.ru = Math.max(p.ru, r.limit - r.remaining);
      }
    } else if (o.unmetered && p.rl === undefined) {
      p.unmetered = true;
    }
    const t = o.tokens;
    if (t) {
      p.tl = t.limit;
      let resetAt = t.resetAt;
      // the seed's `reset-tokens` is whole seconds from now: within a second after the requests' exact reset, it is
      // that one; a live one (Unix ms) is exact and its own window's
      const slack = t.exact ? 0 : 1000;
      if (slack && p.rr > 0 && resetAt - p.rr >= 0 && resetAt - p.rr <= slack) resetAt = p.rr;
      if (resetAt > now) {
        if (p.tr === 0 || resetAt > p.tr + slack) p.tr = resetAt;
        if (Math.abs(resetAt - p.tr) <= slack) p.tu = Math.max(p.tu, t.limit - t.remaining);
      }
    }
    this.#keep(p, now, o.ttlMs);
  }

  acquireGuardNow(key: string, { now, id, maxFailures, windowMs, leaseMs }: GuardRequest): GuardGrant {
    this.#sweep(now);
    let g = this.#guards.get(key);
    if (!g || g.expires <= now) this.#guards.set(key, (g = { failures: [], flight: new Map(), expires: 0 }));
    const cutoff = now - windowMs;
    let i = 0;
    while (i < g.failures.length && g.failures[i]! <= cutoff) i++;
    if (i) g.failures.splice(0, i);
    for (const [fid, until] of g.flight) if (until <= now) g.flight.delete(fid);
    const failures = g.failures.length;
    if (failures + g.flight.size < maxFailures) {
      g.flight.set(id, now + leaseMs);
      g.expires = Math.max(g.expires, now + Math.max(leaseMs, windowMs) + 1000);
      return { granted: true, waitMs: 0, failures };
    }
    if (failures < maxFailures) return { granted: false, waitMs: 25, failures };
    const freeing = g.failures[failures - maxFailures]!;
    return { granted: false, waitMs: Math.max(1, freeing + windowMs - now + 1), failures };
  }

  releaseGuardNow(key: string, { now, id, failed, windowMs }: GuardRelease): void {
    let g = this.#guards.get(key);
    g?.flight.delete(id);
    if (!failed) return;
    if (!g) this.#guards.set(key, (g = { failures: [], flight: new Map(), expires: 0 }));
    // kept in time order (answers may be observed out of order by a few ms)
    let at = g.failures.length;
    while (at > 0 && g.failures[at - 1]! > now) at--;
    g.failures.splice(at, 0, now);
    g.expires = Math.max(g.expires, now + windowMs + 1000);
  }

  async acquirePace(key: string, request: PaceRequest): Promise<PaceGrant> {
    return this.acquirePaceNow(key, request);
  }
  async observePace(key: string, observation: PaceObservation): Promise<void> {
    this.observePaceNow(key, observation);
  }
  async acquireGuard(key: string, request: GuardRequest): Promise<GuardGrant> {
    return this.acquireGuardNow(key, request);
  }
  async releaseGuard(key: string, release: GuardRelease): Promise<void> {
    this.releaseGuardNow(key, release);
  }
  acquireSlotNow(key: string, { now, id, limit, leaseMs }: SlotRequest): SlotGrant {
    this.#sweep(now);
    let held = this.#slots.get(key);
    if (!held) this.#slots.set(key, (held = new Map()));
    for (const [other, end] of held) if (end <= now) held.delete(other);
    if (held.size >= limit) return { granted: false, held: held.size };
    held.set(id, now + leaseMs);
    return { granted: true, held: held.size };
  }

  renewSlotNow(key: string, { now, id, leaseMs }: { now: number; id: string; leaseMs: number }): boolean {
    const held = this.#slots.get(key);
    const end = held?.get(id);
    if (end === undefined || end <= now) return false;
    held!.set(id, now + leaseMs);
    return true;
  }

  releaseSlotNow(key: string, id: string): void {
    const held = this.#slots.get(key);
    held?.delete(id);
    if (held?.size === 0) this.#slots.delete(key);
  }

  async acquireSlot(key: string, request: SlotRequest): Promise<SlotGrant> {
    return this.acquireSlotNow(key, request);
  }

  async renewSlot(key: string, renewal: { now: number; id: string; leaseMs: number }): Promise<boolean> {
    return this.renewSlotNow(key, renewal);
  }

  async releaseSlot(key: string, id: string): Promise<void> {
    this.releaseSlotNow(key, id);
  }
}
