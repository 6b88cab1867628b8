/**
 * Coalescing of concurrent single crypto RPC calls into one JSON-RPC batch, as ethers' `JsonRpcProvider` does
 * (`batchStallTime`, `batchMaxCount`): the proxy serves one request per caller at a time and a batch of up to 100
 * items is one request, so ten parallel reads sent one by one take ten round trips, and one batch takes one.
 *
 * Single calls of one stack to one network URL (with the same headers) that arrive within `stallMs` of the first
 * go out as one batch of at most `maxCount` items, re-numbered 1..n on the wire (unique ids), through the caller's
 * queue place like any request. The answer is split back: each caller gets its own item under its own id, with the
 * batch's status and headers, and the cost headers cut per item (weighted by `itemCredits`: a failed item is
 * billed flat, the others by tier) so that the items' figures sum to the batch's exactly. A batch of one is sent
 * as the call it is. Calls with an `Idempotency-Key` are never coalesced (the key is per request).
 */
import { ResponseFormatError, abortErrorOf } from "./errors.js";
import { requestHeader } from "./request-size.js";
import type { ServiceRequestInit } from "./types.js";

/** How a batch item is weighed when the batch's cost is cut per item: its credits (`failed`: a JSON-RPC error). */
export type RpcItemCredits = (network: string, method: string, failed: boolean) => number;

export interface RpcBatchOptions {
  /**
   * how long the first call waits for others to join it (ms, as ethers' `batchStallTime`; default 0: the next turn of
   * the event loop). A batch still waiting for its place in the caller's queue takes in every call that arrives.
   */
  stallMs: number;
  /** items in one batch at most (ethers' `batchMaxCount`; default 100, the proxy's cap; 1: no coalescing) */
  maxCount: number;
  /** the names of the cost headers to cut per item */
  creditsHeader: string;
  costUsdHeader: string;
  itemCredits?: RpcItemCredits;
}

/**
 * Sends one request through the caller's queue place (the concurrency layer's `held`), waiting for the place with
 * `signal`; `build` makes the request once the place is held, so the batch takes in every call that came meanwhile.
 */
type Send = (build: () => ServiceRequestInit, signal: AbortSignal) => Promise<Response>;

interface Entry {
  request: Record<string, unknown>;
  init: ServiceRequestInit;
  resolve(res: Response): void;
  reject(err: unknown): void;
  settled: boolean;
  unwatch(): void;
}

interface OpenBatch {
  entries: Entry[];
  send: Send;
  url: string;
  timer?: ReturnType<typeof setTimeout>;
  /** waiting for its place: still open to new calls until it has it */
  flushing?: boolean;
  /** called when a caller gives up: the batch is cancelled once every caller has */
  gaveUp?: () => void;
}

/** The first call's wait for others: a given number of ms, or (0) the next turn of the event loop. */
function afterStall(ms: number, fn: () => void): ReturnType<typeof setTimeout> | undefined {
  if (ms > 0) return setTimeout(fn, ms);
  // calls made together (a graph's parallel tool calls) all arrive within one turn: a lone call waits for nothing more
  if (typeof setImmediate === "function") setImmediate(fn);
  else setTimeout(fn, 0);
  return undefined;
}

/** The call as the batcher takes it: a single JSON-RPC object in a string body, without an Idempotency-Key. */
export function singleCall(init: ServiceRequestInit | undefined): Record<string, unknown> | undefined {
  if (!init || typeof init.body !== "string" || (init.method ?? "GET").toUpperCase() !== "POST") return undefined;
  if (requestHeader(init.headers, "idempotency-key") !== undefined) return undefined;
  const text = init.body.trimStart();
  if (!text.startsWith("{")) return undefined;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return undefined;
    return typeof (parsed as { method?: unknown }).method === "string" ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function headersKey(headers: HeadersInit | undefined): string {
  return JSON.stringify([...new Headers(headers ?? {})].sort());
}

export class RpcBatcher {
  readonly #open = new Map<string, OpenBatch>();
  constructor(readonly options: RpcBatchOptions) {}

  /** Queues `request` (the parsed body of `init`) to go out in the open batch of its URL and headers. */
  add(url: string, init: ServiceRequestInit, request: Record<string, unknown>, send: Send): Promise<Response> {
    const key = `${url}\n${headersKey(init.headers)}`;
    let batch = this.#open.get(key);
    if (!batch) {
      const opened: OpenBatch = { entries: [], send, url };
      opened.timer = afterStall(this.options.stallMs, () => this.#flush(key, opened));
      this.#open.set(key, (batch = opened));
    }
    const open = batch;
    const done = new Promise<Response>((resolve, reject) => {
      const signal = init.signal;
      const onAbort = () => {
        settle(entry, () => reject(abortErrorOf(signal!.reason)));
        open.gaveUp?.();
      };
      const entry: Entry = { request, init, resolve, reject, settled: false, unwatch: () => signal?.removeEventListener("abort", onAbort) };
      if (signal?.aborted) return reject(abortErrorOf(signal.reason));
      signal?.addEventListener("abort", onAbort, { once: true });
      open.entries.push(entry);
    });
    if (open.entries.length >= this.options.maxCount) {
      // full: later calls open the next batch
      if (this.#open.get(key) === open) this.#open.delete(key);
      this.#flush(key, open);
    }
    return done;
  }

  /**
   * Sends the batch once its place in the caller's queue is free; until then it stays open, so calls that arrive
   * while an earlier request is in flight go out together next (two round trips at most for any burst).
   */
  #flush(key: string, batch: OpenBatch): void {
    if (batch.timer !== undefined) clearTimeout(batch.timer);
    if (batch.flushing) return;
    batch.flushing = true;
    // the batch goes on while any caller waits for it; it is cancelled when every one has given up
    const controller = new AbortController();
    batch.gaveUp = () => {
      if (batch.entries.every((e) => e.settled)) controller.abort(new DOMException("every caller of the batch gave up", "AbortError"));
    };
    batch.gaveUp();
    let entries: Entry[] = [];
    const build = (): ServiceRequestInit => {
      if (this.#open.get(key) === batch) this.#open.delete(key);
      entries = batch.entries.filter((e) => !e.settled);
      controller.signal.throwIfAborted();
      // A batch of one is the call as it was made. Its body is read after the caller has its answer (and its abort
      // is no longer watched here), so the caller's own signal must reach the body's read below, with the batch's.
      if (entries.length === 1) {
        const own = entries[0]!.init.signal;
        return { ...entries[0]!.init, signal: own ? AbortSignal.any([own, controller.signal]) : controller.signal };
      }
      const wire = entries.map((e, i) => ({ ...e.request, jsonrpc: "2.0", id: i + 1 }));
      return { ...entries[0]!.init, body: JSON.stringify(wire), signal: controller.signal };
    };
    batch
      .send(build, controller.signal)
      .then(async (res) => {
        if (entries.length === 1) return settle(entries[0]!, () => entries[0]!.resolve(res));
        const text = await res.text();
        const parts = this.#split(batch.url, res, text, entries);
        entries.forEach((e, i) => {
          settle(e, () => (parts[i] instanceof Response ? e.resolve(parts[i]) : e.reject(parts[i])));
        });
      })
      .catch((err: unknown) => {
        for (const e of batch.entries) settle(e, () => e.reject(err));
      });
  }

  /** Each caller's answer: its own item (or the batch's whole body when it is not an array), its share of the cost. */
  #split(url: string, res: Response, text: string, entries: Entry[]): (Response | Error)[] {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const items = Array.isArray(json)
      ? new Map(json.map((item: unknown) => [JSON.stringify((item as { id?: unknown })?.id ?? null), item]))
      : undefined;
    const answers = entries.map((_, i) => (items ? items.get(String(i + 1)) : undefined));
    const network = decodeURIComponent(new URL(url).pathname.split("/").pop() ?? "");
    const weights = entries.map((e, i) => {
      const answer = answers[i];
      const failed = !answer || typeof answer !== "object" || "error" in answer;
      return this.options.itemCredits?.(network, String(e.request.method), failed) ?? 1;
    });
    const credits = shares(Number(res.headers.get(this.options.creditsHeader) ?? NaN), weights);
    const nano = shares(Math.round(Number(res.headers.get(this.options.costUsdHeader) ?? NaN) * 1e9), weights);
    return entries.map((e, i) => {
      let body = text;
      if (items) {
        const answer = answers[i];
        if (!answer)
          return new ResponseFormatError(`the batch's answer has no item for ${String(e.request.method)}`, {
            status: res.status,
            body: json,
          });
        body = JSON.stringify({ ...(answer as object), id: e.request.id ?? null });
      }
      const headers = new Headers(res.headers);
      headers.delete("content-length");
      // a figure that cannot be cut (unreadable, negative, fractional) is not handed whole to every item
      if (credits) headers.set(this.options.creditsHeader, String(credits[i]));
      else headers.delete(this.options.creditsHeader);
      if (nano) headers.set(this.options.costUsdHeader, (nano[i]! / 1e9).toFixed(9));
      else headers.delete(this.options.costUsdHeader);
      const out = new Response(body, { status: res.status, statusText: res.statusText, headers });
      if (res.url) Object.defineProperty(out, "url", { value: res.url });
      return out;
    });
  }
}

/** `total` cut in proportion to `weights`, in whole units, summing to `total` exactly (largest remainders first). */
export function shares(total: number, weights: number[]): number[] | undefined {
  // whole units only: a fractional total (`2.5` credits) cannot be cut into whole shares that sum to it
  if (!Number.isSafeInteger(total) || total < 0) return undefined;
  const sum = weights.reduce((a, b) => a + b, 0);
  if (sum <= 0) return weights.map((_, i) => (i === 0 ? total : 0));
  const exact = weights.map((w) => (total * w) / sum);
  const out = exact.map(Math.floor);
  let left = total - out.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => [x - Math.floor(x), i] as const).sort((a, b) => b[0] - a[0]);
  for (let k = 0; left > 0 && k < order.length; k++, left--) out[order[k]![1]]!++;
  // a total near 2^53 times a weight rounds up: a unit too many is taken back from the smallest remainders
  for (let k = order.length - 1; left < 0 && k >= 0; k--) {
    const i = order[k]![1];
    if (out[i]! > 0) {
      out[i]!--;
      left++;
    }
  }
  return out;
}

function settle(entry: Entry, fn: () => void): void {
  if (entry.settled) return;
  entry.settled = true;
  entry.unwatch();
  fn();
}
