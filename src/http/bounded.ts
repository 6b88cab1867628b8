/**
 * Bounded process-wide maps for a server with many tenants. Limiters, abuse guards and wallet states are
 * shared by every client object on one key (the service counts per caller), but a map keyed by API key or
 * wallet that never lets go keeps every tenant ever seen (20,000 keys: ~16 MB). Two shapes here:
 *
 * - `SharedRegistry`: one value per key while anything still needs it. Entries are held weakly (`WeakRef`),
 *   so a value lives exactly as long as an owner (a client's fetch stack, a payment controller) holds it, and
 *   sharing between live owners stays exact; `keep(value, until)` also holds it strongly while its state still
 *   matters without owners (failures the service still counts, a rate-limit window not yet reset, a signed
 *   payment whose outcome is unknown), so a client made per request finds what the last one learned.
 * - `LruMap`: a size-capped map for caches whose loss costs nothing but a repeat (a warn-once set, the clock
 *   offset of an origin).
 *
 * Written here rather than taken from a library: no kept dependency has a weak-valued map, and both are a few
 * lines over `Map`, `WeakRef` and `FinalizationRegistry` (ES2021, in Node, browsers and edge runtimes).
 */

/** sweeps of expired holds run at most this often (each walks the held entries once) */
const SWEEP_EVERY_MS = 1_000;

export class SharedRegistry<V extends object> {
  readonly #refs = new Map<string, WeakRef<V>>();
  /** values held strongly, with the instant (ms since epoch; Infinity: until released) they may be let go */
  readonly #held = new Map<V, number>();
  readonly #finalizer = new FinalizationRegistry<{ key: string; ref: WeakRef<V> }>(({ key, ref }) => {
    // a newer value may sit under the key by now: remove only the one that died
    if (this.#refs.get(key) === ref) this.#refs.delete(key);
  });
  #timer?: ReturnType<typeof setTimeout>;
  #timerAt = Number.POSITIVE_INFINITY;
  #lastSweep = 0;

  /** The live value under `key`, or a new one from `create` (shared from then on while anything holds it). */
  get(key: string, create: () => V): V {
    const found = this.#refs.get(key)?.deref();
    if (found) return found;
    const value = create();
    const ref = new WeakRef(value);
    this.#refs.set(key, ref);
    this.#finalizer.register(value, { key, ref });
    return value;
  }

  /** The live value under `key`, if any (without creating one). */
  peek(key: string): V | undefined {
    return this.#refs.get(key)?.deref();
  }

  /**
   * Holds `value` strongly until `until` (ms since epoch; `Infinity` until a later call lets it go), even when
   * no owner holds it; a time already past lets it go (back to weak). The latest call wins.
   */
  keep(value: V, until: number): void {
    if (!(until > Date.now())) {
      this.#held.delete(value);
      return;
    }
    this.#held.set(value, until);
    if (Number.isFinite(until)) this.#schedule(until);
  }

  /** keys with a live (or not yet finalized) value, and how many are held strongly: for tests and benchmarks */
  get size(): { keys: number; held: number } {
    return { keys: this.#refs.size, held: this.#held.size };
  }

  #schedule(at: number) {
    // one timer for the earliest expiry, never sooner than SWEEP_EVERY_MS after the last sweep
    const when = Math.max(at, this.#lastSweep + SWEEP_EVERY_MS);
    if (when >= this.#timerAt) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerAt = when;
    this.#timer = setTimeout(() => this.#sweep(), Math.max(0, when - Date.now()));
    // a hold must never keep the process alive
    (this.#timer as { unref?: () => void }).unref?.();
  }

  #sweep() {
    const now = Date.now();
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    this.#lastSweep = now;
    let next = Number.POSITIVE_INFINITY;
    for (const [value, until] of this.#held) {
      if (until <= now) this.#held.delete(value);
      else if (until < next) next = until;
    }
    if (Number.isFinite(next)) this.#schedule(next);
  }
}

/** A `Map` that forgets its least recently used entry beyond `capacity`. */
export class LruMap<K, V> {
  readonly #map = new Map<K, V>();
  constructor(readonly capacity: number) {
    if (!(Number.isInteger(capacity) && capacity > 0)) throw new RangeError("LruMap capacity must be a positive integer");
  }

  get(key: K): V | undefined {
    const v = this.#map.get(key);
    if (v !== undefined) {
      // most recently used goes last (Map keeps insertion order)
      this.#map.delete(key);
      this.#map.set(key, v);
    }
    return v;
  }

  has(key: K): boolean {
    return this.#map.has(key);
  }

  set(key: K, value: V): this {
    this.#map.delete(key);
    this.#map.set(key, value);
    if (this.#map.size > this.capacity) this.#map.delete(this.#map.keys().next().value as K);
    return this;
  }

  delete(key: K): boolean {
    return this.#map.delete(key);
  }

  clear(): void {
    this.#map.clear();
  }

  get size(): number {
    return this.#map.size;
  }
}
