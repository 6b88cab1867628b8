/**
 * Requests in flight per caller, as the live service counts them: a wallet may have at most 5 requests in flight
 * (the 6th gets `429 X402_CONCURRENCY_LIMIT`), and the crypto RPC proxy serves one request per user at a time (a
 * second waits ~0.5 s, then gets `429 "Another request for this user is in flight"`). Sending into either limit
 * only draws 429s, so requests wait their turn here instead: one FIFO queue per (service, caller, limit), shared
 * by every stack in the process (every face and client object of one wallet or key), and with a fleet store a
 * place in the store as well, so a fleet of processes behind one wallet keeps to the same 5 between them.
 *
 * A request holds its place from when it is sent until the service is done with it: a JSON answer when its
 * headers arrive (the service has finished it by then), a stream when it ends, fails or is cancelled. Crypto RPC
 * calls take their one-at-a-time place first, then the wallet's: one order for every request, so no two requests
 * ever wait on each other's places.
 *
 * Concurrent single crypto RPC calls of one stack to one network are coalesced into one JSON-RPC batch (rpc-batch.ts,
 * as ethers' provider does): one request, one place in the queue, one round trip for up to 100 calls; each caller
 * still gets its own answer and its own share of the cost. Calls with an `Idempotency-Key` go alone.
 *
 * An API-key request that is not crypto RPC passes through without an `await` or an allocation.
 */
import { abortErrorOf } from "./errors.js";
import { sleep } from "./retry.js";
import { SharedRegistry } from "./bounded.js";
import { contextKey, defaultServiceContext, type ServiceContext } from "./context.js";
import { randomId, viaStore, type LimitStore } from "./shared-limits.js";
import { sameOrigin } from "./redirects.js";
import { RpcBatcher, singleCall, type RpcItemCredits } from "./rpc-batch.js";
import type { FetchLayer, FetchLike } from "./types.js";

export interface ConcurrencyOptions {
  /** requests in flight per wallet (default 5, the live service's cap) */
  perWallet: number;
  /** crypto RPC requests in flight per caller, API key or wallet (default 1: the proxy serves one at a time) */
  cryptoRpc: number;
  /** how long a single crypto RPC call waits for others to join its batch (ms; default 0: the next turn of the event loop) */
  cryptoRpcBatchStallMs: number;
  /** crypto RPC calls coalesced into one batch at most (default 100, the proxy's cap; 1: never coalesce) */
  cryptoRpcBatchMaxCount: number;
  /** an item's credits, to cut a batch's cost per item (the client's pricing; default: equal shares) */
  cryptoRpcItemCredits?: RpcItemCredits;
}

export const DEFAULT_CONCURRENCY: ConcurrencyOptions = {
  perWallet: 5,
  cryptoRpc: 1,
  cryptoRpcBatchStallMs: 0,
  cryptoRpcBatchMaxCount: 100,
};

/** `POST /crypto/rpc/{network}` (not the public network list) */
const CRYPTO_RPC_CALL = /\/crypto\/rpc\/(?!networks(?:[/?#]|$))[^/?#]+(?:[?#]|$)/;

/** Whether `url` is a call to the crypto RPC proxy (the one-at-a-time rule's requests). */
export function isCryptoRpcCall(url: string): boolean {
  return url.includes("/crypto/rpc/") && CRYPTO_RPC_CALL.test(url);
}

/** A FIFO counting semaphore. `take()` answers synchronously when a place is free (no promise on the fast path). */
export class Gate {
  #active = 0;
  readonly #queue: { grant: () => void; cancel: () => void }[] = [];
  constructor(public limit: number) {}

  /** places in use */
  get active(): number {
    return this.#active;
  }
  /** requests waiting for a place */
  get waiting(): number {
    return this.#queue.length;
  }

  /** true when a place was taken now; else a promise of one (in arrival order), rejected on abort */
  take(signal?: AbortSignal | null): true | Promise<void> {
    if (this.#active < this.limit && this.#queue.length === 0) {
      this.#active++;
      return true;
    }
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(abortErrorOf(signal.reason));
      const entry = {
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        cancel: () => reject(abortErrorOf(signal!.reason)),
      };
      const onAbort = () => {
        const i = this.#queue.indexOf(entry);
        if (i >= 0) this.#queue.splice(i, 1);
        entry.cancel();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#queue.push(entry);
    });
  }

  release(): void {
    // the place passes straight to the next in line (FIFO: no newcomer overtakes a waiter), unless the limit was
    // lowered meanwhile and this place is one too many
    if (this.#queue.length > 0 && this.#active <= this.limit) this.#queue.shift()!.grant();
    else this.#active--;
  }

  /** A larger or smaller limit (the strictest asked for wins among the stacks sharing the gate). */
  setLimit(limit: number): void {
    this.limit = limit;
    while (this.#active < this.limit && this.#queue.length > 0) {
      this.#active++;
      this.#queue.shift()!.grant();
    }
  }
}

/** one gate per (service origin, caller, kind), shared by every live stack of a context on it */
const GATES = contextKey("in-flight gates", () => new SharedRegistry<Gate>());

/** how long a place in a fleet store lasts without renewal (a process that died frees it then) */
const SLOT_LEASE_MS = 30_000;
/** how often a process waiting for a fleet place asks the store again */
const SLOT_POLL_MS = 20;

/** A place held by one request: locally, and in the fleet store when there is one. */
interface Place {
  gate: Gate;
  fleet?: { store: LimitStore; label: string; key: string; id: string; renew?: ReturnType<typeof setInterval> };
}

async function takeFleetPlace(
  shared: SharedConcurrency,
  key: string,
  limit: number,
  signal: AbortSignal | null | undefined,
): Promise<Place["fleet"]> {
  const { store, label } = shared;
  if (typeof store.acquireSlot !== "function") return undefined;
  const id = randomId();
  for (;;) {
    const grant = await viaStore(store, label, () => store.acquireSlot!(key, { now: Date.now(), id, limit, leaseMs: SLOT_LEASE_MS }));
    // the store failed: this process keeps to the limit on its own (its local gate is held already)
    if (!grant) return undefined;
    if (grant.granted) {
      const renew = setInterval(
        () => void viaStore(store, label, () => store.renewSlot!(key, { now: Date.now(), id, leaseMs: SLOT_LEASE_MS })),
        SLOT_LEASE_MS / 3,
      );
      (renew as { unref?: () => void }).unref?.();
      return { store, label, key, id, renew };
    }
    try {
      await sleep(SLOT_POLL_MS + Math.random() * SLOT_POLL_MS, signal);
    } catch (err) {
      throw signal?.aborted ? abortErrorOf(signal.reason) : err;
    }
  }
}

function free(places: Place[]): void {
  // the wallet's place (taken last) goes first: the reverse of the order taken
  for (let i = places.length - 1; i >= 0; i--) {
    const p = places[i]!;
    p.gate.release();
    const f = p.fleet;
    if (f) {
      clearInterval(f.renew);
      void viaStore(f.store, f.label, () => f.store.releaseSlot!(f.key, f.id));
    }
  }
  places.length = 0;
}

/** Hands `places` back when the service is done with `response`: at once for JSON, at the end of a stream. */
function freeWhenDone(response: Response, places: Place[]): Response {
  const body = response.body;
  const isStream = (response.headers.get("content-type") ?? "").includes("text/event-stream");
  if (!body || !isStream) {
    free(places);
    return response;
  }
  const reader = body.getReader();
  const done = () => free(places);
  const wrapped = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let read: ReadableStreamReadResult<Uint8Array>;
        try {
          read = await reader.read();
        } catch (err) {
          done();
          throw err;
        }
        if (read.done) {
          done();
          controller.close();
        } else controller.enqueue(read.value);
      },
      cancel(reason) {
        done();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  const out = new Response(wrapped, { status: response.status, statusText: response.statusText, headers: response.headers });
  if (response.url) Object.defineProperty(out, "url", { value: response.url });
  return out;
}

/** A fleet store through which a wallet's places are counted across processes, and the label of its warning. */
export interface SharedConcurrency {
  store: LimitStore;
  label: string;
}

/**
 * The layer for one caller of one service. `wallet`: the caller is a wallet (its requests count toward the
 * wallet's cap); any caller's crypto RPC calls go one at a time. Only requests that carry the caller's
 * credentials to the service's origin count.
 */
export function concurrencyLayer(
  origin: string,
  identity: string,
  wallet: boolean,
  options: Partial<ConcurrencyOptions> = {},
  shared?: SharedConcurrency,
  rpcCostHeaders?: { creditsHeader: string; costUsdHeader: string },
  context: ServiceContext = defaultServiceContext(),
): FetchLayer {
  const gates = context.part(GATES);
  const o: ConcurrencyOptions = { ...DEFAULT_CONCURRENCY, ...options };
  // this stack's open batches (a batch goes out through one stack's layers below: its transport, its headers)
  const batcher =
    o.cryptoRpcBatchMaxCount > 1 && rpcCostHeaders
      ? new RpcBatcher({
          stallMs: o.cryptoRpcBatchStallMs,
          maxCount: Math.min(o.cryptoRpcBatchMaxCount, 100),
          itemCredits: o.cryptoRpcItemCredits,
          ...rpcCostHeaders,
        })
      : undefined;
  const scope = `${origin}|${identity}`;
  const gateOf = (kind: string, limit: number): Gate => {
    const gate = gates.get(`${scope}|${kind}`, () => new Gate(limit));
    if (limit < gate.limit) gate.setLimit(limit); // stacks of one caller asking for different limits: the strictest
    return gate;
  };
  // this layer's own strong hold on its gates (weakly shared with the other stacks of the caller)
  const walletGate = wallet ? gateOf("wallet", o.perWallet) : undefined;
  let rpcGate: Gate | undefined;
  return (next) => (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const rpc = isCryptoRpcCall(url);
    // an API key's request that is not crypto RPC (the common case) waits for nothing: not even a promise of ours
    if ((!walletGate && !rpc) || init?.service?.auth === false || !sameOrigin(url, origin)) return next(input, init);
    const call = rpc && batcher && (typeof input === "string" || input instanceof URL) ? singleCall(init) : undefined;
    if (call) return batcher!.add(url, init!, call, (build, signal) => held((i) => next(i, build()), true, url, { signal }));
    return held(next, rpc, input, init);
  };

  async function held(
    next: Parameters<FetchLayer>[0],
    rpc: boolean,
    input: Parameters<FetchLike>[0],
    init: Parameters<FetchLike>[1],
  ): Promise<Response> {
    const places: Place[] = [];
    const signal = init?.signal;
    try {
      if (rpc) {
        rpcGate ??= gateOf("crypto-rpc", o.cryptoRpc);
        const taken = rpcGate.take(signal);
        if (taken !== true) await taken;
        places.push({ gate: rpcGate });
        if (shared) places[places.length - 1]!.fleet = await takeFleetPlace(shared, `${scope}|crypto-rpc`, o.cryptoRpc, signal);
      }
      if (walletGate) {
        const taken = walletGate.take(signal);
        if (taken !== true) await taken;
        places.push({ gate: walletGate });
        if (shared) places[places.length - 1]!.fleet = await takeFleetPlace(shared, `${scope}|wallet`, o.perWallet, signal);
      }
    } catch (err) {
      free(places);
      throw err;
    }
    let response: Response;
    try {
      response = await next(input, init);
    } catch (err) {
      free(places);
      throw err;
    }
    return freeWhenDone(response, places);
  }
}
