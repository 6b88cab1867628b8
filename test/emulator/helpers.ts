/**
 * Test helpers for the emulator's own contract: a probe inference route (so the pipeline is tested without
 * depending on the chat engine), and a raw HTTP GET that leaves compressed bodies compressed.
 */
import { request } from "node:http";
import type { Route } from "langchain-service-emulator";

/**
 * POST /probe/inference: an inference route like chat (model headers, tier limits, balance checks) that
 * charges `usd` and reports `tokens`; with `stream: true` it streams `chunks` SSE lines (`delayMs` apart) and `[DONE]`.
 */
export const probeRoute: Route = {
  method: "POST",
  pattern: "/probe/inference",
  auth: "required",
  inference: true,
  handler(req, ctx, caller) {
    const body = JSON.parse(req.body.toString("utf8")) as {
      model: string;
      usd?: number;
      tokens?: number;
      stream?: boolean;
      chunks?: number;
      delayMs?: number;
    };
    const tokens = body.tokens ?? 10;
    if (caller.kind !== "anonymous") ctx.ledger.charge(caller.account, body.usd ?? 0.001, { kind: "probe", modelId: body.model });
    if (body.stream) {
      const chunks = body.chunks ?? 5;
      return {
        status: 200,
        headers: { "content-type": "text/event-stream" },
        stream: (async function* () {
          for (let i = 0; i < chunks; i++) {
            // `delayMs` between chunks: a stream the server is still sending (a request still in flight)
            if (body.delayMs) await new Promise((r) => setTimeout(r, body.delayMs));
            yield `data: {"i":${i}}\n\n`;
          }
          yield "data: [DONE]\n\n";
        })(),
        meta: { tokens },
      };
    }
    return { status: 200, body: { ok: true, model: body.model, caller: caller.kind }, meta: { tokens } };
  },
};

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** GET without any transparent decompression (fetch would undo Content-Encoding). */
export function rawGet(url: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "GET", headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

export function bearer(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}` };
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A clock for the emulator's `now` option: real time plus what the test moved it on by, or with `frozen` only what
 * the test moved it on by. Time-based behaviour (job processing, rate-limit windows, blocks) then passes when the
 * test says, without waiting for it in real time.
 */
export function testClock(options: { frozen?: boolean } = {}): { now: () => number; advance(ms: number): void } {
  const start = Date.now();
  let offset = 0;
  return {
    now: () => (options.frozen ? start : Date.now()) + offset,
    advance(ms: number) {
      offset += ms;
    },
  };
}
