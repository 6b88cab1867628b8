/**
 * JSON-RPC answers of the crypto RPC proxy: a single answer and a batch answer read by `client.cryptoRpc()`
 * (src/crypto-rpc/rpc.ts: correlated by id, JSON-RPC errors as data), and the batch the stack coalesces from
 * concurrent single calls, split back per caller (src/http/rpc-batch.ts, its cost headers cut per item). Any answer
 * is each caller's own response or a typed error; split costs sum to the batch's.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceClient } from "../../src/client.js";
import { shares } from "../../src/http/rpc-batch.js";
import { jsonValue, nearValid, startLoopback, textMutation, typedOutcome, type Loopback } from "./bounds.js";

let lb: Loopback;
beforeAll(async () => {
  lb = await startLoopback();
});
afterAll(() => lb.close());

const client = () => new ServiceClient({ baseUrl: lb.url, apiKey: "k", retry: false, pacing: false, abuseGuard: false });

const item = (id: unknown, i: number) =>
  i % 3 === 2
    ? { jsonrpc: "2.0", id, error: { code: -32000, message: "execution reverted", data: { stack: "at x", reason: "r" } } }
    : { jsonrpc: "2.0", id, result: i % 3 ? "0x2105" : { number: "0x10", transactions: [] } };

/** the answer's body text: near-valid JSON, or valid JSON cut or spliced */
const bodyText = (valid: unknown) =>
  fc.oneof(
    { weight: 3, arbitrary: nearValid(valid).map((v) => JSON.stringify(v) ?? "") },
    { weight: 1, arbitrary: textMutation(JSON.stringify(valid)) },
    { weight: 1, arbitrary: jsonValue.map((v) => JSON.stringify(v) ?? "") },
  );

const costHeaders = fc.record({
  credits: fc.oneof(fc.nat(10_000).map(String), fc.constantFrom("", "-5", "2.5", "1e400", "NaN", "x", "1e21")),
  cost: fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }).map(String), fc.constantFrom("", "-1", "1e400", "x")),
});

function answer(status: number, text: string, headers: { credits: string; cost: string }) {
  lb.handler = (_req, res) => {
    const h: Record<string, string> = { "content-type": "application/json" };
    if (headers.credits) h["x-service-rpc-credits"] = headers.credits;
    if (headers.cost) h["x-service-rpc-cost-usd"] = headers.cost;
    res.writeHead(status, h);
    res.end(text);
  };
}

describe("client.cryptoRpc()", () => {
  it("a single answer: its result or error, or a typed error", async () => {
    const c = client();
    await fc.assert(
      fc.asyncProperty(bodyText(item(7, 0)), costHeaders, fc.constantFrom(200, 200, 200, 400, 429, 500), async (text, h, status) => {
        answer(status, text, h);
        const out = await typedOutcome(() => c.cryptoRpc("base-mainnet", { method: "eth_chainId", id: 7 }, { networks: false }), 2_000);
        if (out.ok) {
          expect(out.value.response.jsonrpc).toBe("2.0");
          expect("result" in out.value.response || out.value.error !== undefined).toBe(true);
          // a node's stack never reaches the caller
          expect(JSON.stringify(out.value.error ?? {})).not.toContain('"stack"');
        } else if (status !== 200) expect(out.error.status).toBe(status);
      }),
      { numRuns: 70 },
    );
  });

  it("a batch answer: one response per request, in request order and by id, or a typed error", async () => {
    const c = client();
    const requests = [
      { method: "eth_chainId", id: 1 },
      { method: "eth_blockNumber", id: "b" },
      { method: "eth_call", params: [{}], id: 3 },
    ];
    const valid = [item(3, 2), item("b", 1), item(1, 0)];
    await fc.assert(
      fc.asyncProperty(bodyText(valid), costHeaders, async (text, h) => {
        answer(200, text, h);
        const out = await typedOutcome(() => c.cryptoRpc("base-mainnet", requests, { networks: false }), 2_000);
        if (out.ok) {
          expect(out.value.responses.map((r) => r.id)).toEqual([1, "b", 3]);
        }
      }),
      { numRuns: 70 },
    );
  });
});

describe("coalesced single calls", () => {
  it("each caller gets its own item or a typed error; split credits sum to the batch's", async () => {
    const c = client();
    // the wire batch is numbered 1..n; the answer's items may be shuffled, altered, missing or extra
    const valid = [item(2, 1), item(1, 0), item(3, 2)];
    await fc.assert(
      fc.asyncProperty(bodyText(valid), costHeaders, async (text, h) => {
        answer(200, text, h);
        const calls = ["eth_chainId", "eth_blockNumber", "eth_gasPrice"].map((method) =>
          typedOutcome(() => c.cryptoRpc("base-mainnet", { method, id: 42 }, { networks: false }), 2_000),
        );
        const outs = await Promise.all(calls);
        for (const o of outs) if (o.ok) expect(o.value.response.id).toBe(42);
        // the callers' credits are the batch's cut per item (summing to it), or absent: never the whole batch's each
        if (outs.every((o) => o.ok)) {
          const figures = outs.map((o) => (o.ok ? o.value.credits : undefined));
          if (figures.some((f) => f !== undefined)) {
            expect(figures.every((f) => Number.isInteger(f) && f! >= 0)).toBe(true);
            expect(figures.reduce((a, f) => a! + f!, 0)).toBe(Number(h.credits));
          }
        }
      }),
      { numRuns: 60 },
    );
  });

  it("shares(): whole units, none negative, summing to the total", () => {
    fc.assert(
      fc.property(fc.nat(Number.MAX_SAFE_INTEGER), fc.array(fc.nat(100), { minLength: 1, maxLength: 100 }), (total, weights) => {
        const out = shares(total, weights)!;
        expect(out).toHaveLength(weights.length);
        expect(out.every((x) => Number.isInteger(x) && x >= 0)).toBe(true);
        expect(out.reduce((a, b) => a + b, 0)).toBe(total);
      }),
      { numRuns: 500 },
    );
  });
});

describe("found by the properties above", () => {
  // before: [1, 1, 1], three whole credits out of the batch's 2.5
  it("a fractional total is not cut into shares that do not sum to it", () => {
    expect(shares(2.5, [1, 1, 1])).toBeUndefined();
  });

  // before: 8062050885874196, one unit more than the total (the float product rounded up)
  it("a total near 2^53 is cut exactly", () => {
    expect(shares(8062050885874195, [9])).toEqual([8062050885874195]);
    expect(shares(4701746818709392, [31, 7])?.reduce((a, b) => a + b, 0)).toBe(4701746818709392);
  });

  // before: "2.5" gave each caller 1 credit (3 in all), "-5" gave each caller the batch's -5
  it.each(["2.5", "-5"])("coalesced calls under a credits header of %s carry no credits figure, not the batch's", async (credits) => {
    const c = client();
    answer(200, JSON.stringify([item(2, 1), item(1, 0), item(3, 1)]), { credits, cost: "-1" });
    const outs = await Promise.all(
      ["eth_chainId", "eth_blockNumber", "eth_gasPrice"].map((method) => c.cryptoRpc("base-mainnet", { method }, { networks: false })),
    );
    expect(outs.map((o) => o.credits)).toEqual([undefined, undefined, undefined]);
    expect(outs.map((o) => o.costUsd)).toEqual([undefined, undefined, undefined]);
  });
});
