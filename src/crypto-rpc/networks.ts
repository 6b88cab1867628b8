/**
 * The crypto RPC network list: fetched from `GET /crypto/rpc/networks` (public), cached with a TTL and
 * single-flight (100 concurrent tool calls make one request). The endpoint's answer is the truth: no list in
 * this package decides whether a slug is valid, because deployments differ (spec 4.2). What is derived from a
 * slug here (family, mainnet/testnet) only groups and labels it.
 */
import { UnsupportedNetworkError, abortErrorOf } from "../http/errors.js";
/** What the cache needs of a client (`ServiceClient` has it): the network list, read through its stack. */
export interface NetworkLister {
  listCryptoNetworks(options?: { signal?: AbortSignal }): Promise<string[]>;
}

export type NetworkFamily = "evm" | "solana" | "starknet";

export interface NetworkInfo {
  slug: string;
  family: NetworkFamily;
  /** true for production networks, false for testnets/devnets */
  mainnet: boolean;
}

const TESTNET_WORDS = /-(sepolia|holesky|hoodi|goerli|testnet|devnet|fuji|amoy|mumbai|chiado|alfajores|testnet\d*)$/;

/**
 * Family and kind of a slug, from its shape: `solana-*` and `starknet-*` are their own families; every other
 * slug is EVM (the proxy's EVM chains all share one method set, and new families so far have been EVM L2s).
 */
export function describeNetwork(slug: string): NetworkInfo {
  const family: NetworkFamily = slug.startsWith("solana-") ? "solana" : slug.startsWith("starknet-") ? "starknet" : "evm";
  const mainnet = !TESTNET_WORDS.test(slug) && !/test|dev/.test(slug);
  return { slug, family, mainnet };
}

export interface GroupedNetworks {
  evm: { mainnet: string[]; testnet: string[] };
  solana: { mainnet: string[]; testnet: string[] };
  starknet: { mainnet: string[]; testnet: string[] };
}

export function groupNetworks(slugs: readonly string[]): GroupedNetworks {
  const out: GroupedNetworks = {
    evm: { mainnet: [], testnet: [] },
    solana: { mainnet: [], testnet: [] },
    starknet: { mainnet: [], testnet: [] },
  };
  for (const slug of [...slugs].sort()) {
    const info = describeNetwork(slug);
    out[info.family][info.mainnet ? "mainnet" : "testnet"].push(slug);
  }
  return out;
}

export interface NetworkCacheOptions {
  /** how long a fetched list stays fresh, in ms (default 5 minutes) */
  ttlMs?: number;
  /** injectable clock (ms) for tests */
  now?: () => number;
}

export const DEFAULT_NETWORKS_TTL_MS = 5 * 60_000;
/** the shortest time between two refreshes caused by an unknown slug */
export const MISS_REFRESH_MS = 30_000;

export class NetworkCache {
  readonly #client: NetworkLister;
  readonly #ttlMs: number;
  readonly #now: () => number;
  #value?: { networks: string[]; set: Set<string>; fetchedAt: number };
  #inflight?: Flight;

  constructor(client: NetworkLister, options: NetworkCacheOptions = {}) {
    this.#client = client;
    this.#ttlMs = options.ttlMs ?? DEFAULT_NETWORKS_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  /** The list as last fetched (fresh or stale), without a request; undefined before the first fetch. */
  get known(): readonly string[] | undefined {
    return this.#value?.networks;
  }

  get isFresh(): boolean {
    return this.#value !== undefined && this.#now() - this.#value.fetchedAt < this.#ttlMs;
  }

  /**
   * The sorted list: cached while fresh; concurrent callers share one request. Each caller's `signal` ends its
   * own wait; the shared request is aborted only when every caller waiting for it has aborted.
   */
  async get(options: { signal?: AbortSignal; refresh?: boolean } = {}): Promise<string[]> {
    if (!options.refresh && this.isFresh) return this.#value!.networks;
    let flight = this.#inflight;
    if (!flight || flight.controller.signal.aborted) {
      const controller = new AbortController();
      const started: Flight = { controller, waiters: 0, promise: undefined as unknown as Promise<string[]> };
      started.promise = this.#client
        .listCryptoNetworks({ signal: controller.signal })
        .then((networks) => {
          const sorted = [...new Set(networks)].sort();
          this.#value = { networks: sorted, set: new Set(sorted), fetchedAt: this.#now() };
          return sorted;
        })
        .finally(() => {
          if (this.#inflight === started) this.#inflight = undefined;
        });
      this.#inflight = flight = started;
    }
    return join(flight, options.signal);
  }

  /** Forgets the list (the next `get()` fetches). */
  invalidate(): void {
    this.#value = undefined;
  }

  /**
   * Throws `UnsupportedNetworkError` (listing the valid slugs) when `slug` is not in the live list.
   * Fetches the list when it is not fresh. Returns the slug's description.
   */
  async assertSupported(slug: string, options: { signal?: AbortSignal } = {}): Promise<NetworkInfo> {
    let networks = await this.get(options);
    // A slug the cached list lacks may be one the service added since: ask again before refusing, at most
    // once per MISS_REFRESH_MS, so a model repeating a typo does not turn into a request per call.
    if (!this.#value?.set.has(slug) && this.#now() - (this.#value?.fetchedAt ?? 0) >= MISS_REFRESH_MS) {
      networks = await this.get({ ...options, refresh: true });
    }
    if (!this.#value?.set.has(slug)) throw unsupportedNetwork(slug, networks);
    return describeNetwork(slug);
  }

  /** Synchronous check against the last known list; undefined when no list is known yet. */
  check(slug: string): boolean | undefined {
    return this.#value ? this.#value.set.has(slug) : undefined;
  }
}

/** One shared request for the list, and how many callers still wait for it. */
interface Flight {
  promise: Promise<string[]>;
  controller: AbortController;
  waiters: number;
}

function join(flight: Flight, signal: AbortSignal | undefined): Promise<string[]> {
  flight.waiters++;
  // a caller without a signal waits to the end: the request is never abandoned under it
  if (!signal) return flight.promise;
  const leave = () => {
    if (--flight.waiters === 0) flight.controller.abort(signal.reason);
  };
  if (signal.aborted) {
    leave();
    return Promise.reject(abortErrorOf(signal.reason));
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      leave();
      reject(abortErrorOf(signal.reason));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    flight.promise.then(
      (networks) => {
        signal.removeEventListener("abort", onAbort);
        resolve(networks);
      },
      (err) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

export function unsupportedNetwork(slug: string, validNetworks: readonly string[]): UnsupportedNetworkError {
  const close = validNetworks.filter((n) => n.split("-")[0] === slug.split("-")[0]);
  const hint = close.length > 0 ? ` Did you mean ${close.map((c) => JSON.stringify(c)).join(" or ")}?` : "";
  return new UnsupportedNetworkError(`Unsupported network ${JSON.stringify(slug)}.${hint} Valid networks: ${validNetworks.join(", ")}`, {
    network: slug,
    validNetworks: [...validNetworks],
    code: "UNSUPPORTED_NETWORK",
  });
}

/** One cache per client, shared by its tools, adapters and `cryptoRpc` calls. */
const caches = new WeakMap<object, NetworkCache>();

export function networkCacheFor(client: NetworkLister, options: NetworkCacheOptions = {}): NetworkCache {
  let cache = caches.get(client);
  if (!cache) caches.set(client, (cache = new NetworkCache(client, options)));
  return cache;
}
