/**
 * Reads what a served answer says it cost, as the caller reads the answer: the body passes through unchanged,
 * chunk by chunk, and what the meter needs is picked up on the way (a JSON answer's `id`, `usage` and `cost`; a
 * stream's usage chunk; crypto RPC's cost headers). `onEnd` is called once: when the body was read to its end, or
 * cancelled, or failed (`complete` false: a stream cut off before its usage chunk has no cost to tell).
 */
import type { MeteredKind } from "./estimate.js";
import { toNumber } from "../http/headers.js";

export interface MeterReading {
  requestId?: string;
  model?: string;
  costUsd?: number;
  costDiem?: number;
  tokens?: { input?: number; output?: number; cached?: number; reasoning?: number };
  rpcCredits?: number;
  /** `Idempotent-Replayed: true`: the answer repeats the original's cost headers, but the replay is not billed */
  replayed?: boolean;
  /**
   * The stream ended in an in-band error event (`data: {"error": …}`): the service charges nothing for it, as it
   * was never charged (an error before content) or is refunded (after content)
   */
  failedInBand?: boolean;
}

export interface MeterHeaders {
  rpcCostUsdHeader: string;
  rpcCreditsHeader: string;
}

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/** A cost header's figure: a finite decimal of at least 0, else none (an empty header is not a cost of $0). */
function headerFigure(value: string | null): number | undefined {
  const n = toNumber(value);
  return n !== undefined && n >= 0 ? n : undefined;
}

/** What one completion (JSON or a stream chunk) says: id, model, usage, cost. */
function readCompletion(into: MeterReading, value: unknown): void {
  if (!value || typeof value !== "object") return;
  const v = value as Record<string, unknown>;
  if (v.error && typeof v.error === "object") into.failedInBand = true;
  if (typeof v.id === "string") into.requestId ??= v.id;
  if (typeof v.model === "string") into.model ??= v.model;
  const usage = v.usage as Record<string, unknown> | undefined | null;
  if (usage && typeof usage === "object") {
    const details = (usage.prompt_tokens_details ?? {}) as Record<string, unknown>;
    const out = (usage.completion_tokens_details ?? {}) as Record<string, unknown>;
    into.tokens = {
      input: num(usage.prompt_tokens),
      output: num(usage.completion_tokens),
      cached: num(details.cached_tokens),
      reasoning: num(out.reasoning_tokens),
    };
  }
  const cost = v.cost as Record<string, unknown> | undefined | null;
  if (cost && typeof cost === "object" && num(cost.usd) !== undefined) {
    into.costUsd = num(cost.usd);
    into.costDiem = num(cost.diem) ?? 0;
  }
}

/**
 * The answer with its body metered. A crypto RPC answer is read from its headers (its body is left alone); other
 * answers without JSON or a stream (images, audio) are done at once: their cost is priced from the request.
 */
export function meterResponse(
  res: Response,
  kind: MeteredKind,
  headers: MeterHeaders,
  onEnd: (reading: MeterReading, complete: boolean) => void,
): Response {
  // a completion's own id is the one the ledger charges under; else the header the service names for quoting
  const headerId = res.headers.get("x-request-id") ?? res.headers.get("cf-ray") ?? undefined;
  const reading: MeterReading = {};
  if (kind === "crypto-rpc") {
    reading.requestId = headerId;
    if (res.headers.get("idempotent-replayed") === "true") {
      // the original was charged (and counted) already: a replay costs nothing, whatever its headers repeat
      Object.assign(reading, { costUsd: 0, costDiem: 0, rpcCredits: 0, replayed: true });
      onEnd(reading, true);
      return res;
    }
    reading.costUsd = headerFigure(res.headers.get(headers.rpcCostUsdHeader));
    if (reading.costUsd !== undefined) reading.costDiem = 0;
    const credits = headerFigure(res.headers.get(headers.rpcCreditsHeader));
    if (credits !== undefined) reading.rpcCredits = credits;
    onEnd(reading, true);
    return res;
  }
  const type = res.headers.get("content-type") ?? "";
  const sse = type.includes("text/event-stream");
  const json = !sse && type.includes("json") && (kind === "chat" || kind === "embeddings");
  // `body` is not touched to know whether there is one: on a guarded answer, asking for it builds a stream
  const bodyless = res.status === 204 || res.status === 205 || res.status === 304 || res.headers.get("content-length") === "0";
  if (bodyless || !(sse || json)) {
    reading.requestId = headerId;
    onEnd(reading, true);
    return res;
  }
  let ended = false;
  const end = (complete: boolean) => {
    if (ended) return;
    ended = true;
    reading.requestId ??= headerId;
    onEnd(reading, complete);
  };
  // A JSON answer is metered where it is read whole (`text()`, `json()`): no second stream per request. Read as a
  // stream instead (`body`), it goes through the pull stream below.
  // the answer's own `body` (before a JSON answer's is replaced by the metered stream), only when one is needed
  const bodyOf = bodyGetterOf(res);
  const source = () => bodyOf.call(res) as ReadableStream<Uint8Array> | null;
  let streamedResponse: Response | undefined;
  const streamed = (): Response => (streamedResponse ??= meteredStream(res, source, sse, reading, end));
  if (json) return meteredAtRead(res, reading, end, streamed);
  return streamed();
}

/** The `body` getter the answer has now (its own, its class's: the Node base's answer is a Response subclass). */
function bodyGetterOf(res: Response): () => unknown {
  for (let o: object | null = res; o; o = Object.getPrototypeOf(o) as object | null) {
    const getter = Object.getOwnPropertyDescriptor(o, "body")?.get;
    if (getter) return getter;
  }
  return () => null;
}

/** A JSON answer whose whole-body reads are observed (its `body`, if asked for, is the metered stream). */
function meteredAtRead(res: Response, reading: MeterReading, end: (complete: boolean) => void, streamed: () => Response): Response {
  const text = res.text.bind(res);
  const json = res.json.bind(res);
  let viaStream: Response | undefined;
  const observe = <T>(read: Promise<T>, value: (v: T) => unknown): Promise<T> =>
    read.then(
      (v) => {
        try {
          readCompletion(reading, value(v));
        } catch {
          /* not what it claims: the caller's parser says so; the meter has no cost */
        }
        end(true);
        return v;
      },
      (err: unknown) => {
        end(false);
        throw err;
      },
    );
  Object.defineProperties(res, {
    text: { value: () => (viaStream ? viaStream.text() : observe(text(), (t) => JSON.parse(t))), configurable: true },
    json: { value: () => (viaStream ? viaStream.json() : observe(json(), (v) => v)), configurable: true },
    arrayBuffer: {
      value: async () =>
        viaStream ? viaStream.arrayBuffer() : new TextEncoder().encode(await observe(text(), (t) => JSON.parse(t))).buffer,
      configurable: true,
    },
    body: { get: () => (viaStream ??= streamed()).body, configurable: true },
  });
  return res;
}

/** The answer handed on through a pull stream that observes its bytes (streams; a JSON body read as a stream). */
function meteredStream(
  res: Response,
  source: () => ReadableStream<Uint8Array> | null,
  sse: boolean,
  reading: MeterReading,
  end: (complete: boolean) => void,
): Response {
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let carry = "";
  /** SSE: the lines of the chunk that carry an id, usage or cost (a cheap test before any parse) */
  const scan = (text: string) => {
    const lines = (carry + text).split("\n");
    carry = lines.pop() ?? "";
    for (const line of lines) {
      if (!line.startsWith("data:")) continue;
      const needsId = reading.requestId === undefined || reading.model === undefined;
      // an in-band error's `"error"` key (inside a JSON string a quote is escaped: content never matches)
      if (!needsId && !line.includes('"usage"') && !line.includes('"cost"') && !line.includes('"error"')) continue;
      try {
        readCompletion(reading, JSON.parse(line.slice(5)));
      } catch {
        /* not JSON ([DONE], a comment): nothing to read */
      }
    }
  };
  const inner = source();
  if (!inner) {
    end(true);
    return res;
  }
  const reader = inner.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        end(false);
        controller.error(err);
        return;
      }
      if (chunk.done) {
        try {
          if (sse) scan(`${decoder.decode()}\n`);
          else readCompletion(reading, JSON.parse(parts.join("") + decoder.decode()));
        } catch {
          /* a body that is not what it claims: the caller's parser says so; the meter has no cost */
        }
        end(true);
        controller.close();
        return;
      }
      const text = decoder.decode(chunk.value, { stream: true });
      if (sse) scan(text);
      else parts.push(text);
      controller.enqueue(chunk.value);
    },
    cancel(reason) {
      end(false);
      return reader.cancel(reason);
    },
  });
  const metered = new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  // what the layers below learned of the answer stays readable
  Object.defineProperty(metered, "url", { value: res.url });
  return metered;
}
