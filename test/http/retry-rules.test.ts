/**
 * Every re-send's rule, one named predicate each (src/http/retry-rules.ts): pure functions, tested alone.
 */
import { describe, expect, it } from "vitest";
import {
  abuse429,
  asksForStream,
  clockWasOff,
  inBandOverload,
  inFlight429,
  isOneShotBody,
  mayResignAfter401,
  modelOffline503,
  overloaded429,
  rateLimited429,
  routeRateLimited429,
  serverError5xx,
  settling409,
  staleSignIn401,
  transientInBand,
} from "../../src/http/retry-rules.js";
import { classify429 } from "../../src/http/refusals.js";
import { InBandStreamError, ModelOverloadedError, ServiceError, StreamError } from "../../src/http/errors.js";

describe("retry rules", () => {
  it("a 429 is one of four kinds, each with its own rule", () => {
    const kinds = (text: string) => [abuse429, inFlight429, overloaded429, rateLimited429].map((rule) => rule(classify429(text)));
    expect(kinds('{"error":"Too many failed attempts. Blocked for 30 seconds"}')).toEqual([true, false, false, false]);
    expect(kinds('{"code":"X402_CONCURRENCY_LIMIT"}')).toEqual([false, true, false, false]);
    expect(kinds('{"error":"The model is currently overloaded"}')).toEqual([false, false, true, false]);
    expect(kinds('{"error":"Rate limit exceeded"}')).toEqual([false, false, false, true]);
  });

  it("serverError5xx: 500, 502, 503 always; 504 only for a request that asked for a stream", () => {
    for (const status of [500, 502, 503]) expect(serverError5xx(status, "{}")).toBe(true);
    expect(serverError5xx(504, '{"model":"m"}')).toBe(false);
    expect(serverError5xx(504, '{"model":"m","stream":true}')).toBe(true);
    expect(serverError5xx(504, new TextEncoder().encode('{"stream":true}'))).toBe(true);
    expect(serverError5xx(504, '{"stream":"true"}')).toBe(false);
    for (const status of [400, 401, 402, 404, 409, 429, 501]) expect(serverError5xx(status, '{"stream":true}')).toBe(false);
    expect(asksForStream('{"stream": tru')).toBe(false);
  });

  it("modelOffline503: a 503 saying offline is the answer; a busy 503 is not", () => {
    expect(modelOffline503(503, "the model is offline")).toBe(true);
    expect(modelOffline503(503, "busy, try again")).toBe(false);
    expect(modelOffline503(500, "offline")).toBe(false);
  });

  it("isOneShotBody: streams and async iterables are never re-sent; strings and bytes are", () => {
    expect(isOneShotBody(new ReadableStream())).toBe(true);
    expect(isOneShotBody((async function* () {})())).toBe(true);
    expect(isOneShotBody("{}")).toBe(false);
    expect(isOneShotBody(new Uint8Array(2))).toBe(false);
    expect(isOneShotBody(null)).toBe(false);
  });

  it("the 401 re-sign: only a clock-sensitive sign-in's 401, never with a streamed body", () => {
    expect(mayResignAfter401(401, 0, "{}")).toBe(true);
    expect(mayResignAfter401(401, undefined, "{}")).toBe(false); // an API key, or no sign-in
    expect(mayResignAfter401(403, 0, "{}")).toBe(false);
    expect(mayResignAfter401(401, 0, new ReadableStream())).toBe(false);
    expect(clockWasOff(0, 1_999)).toBe(false);
    expect(clockWasOff(0, 2_000)).toBe(true);
    expect(clockWasOff(500, -1_600)).toBe(true);
    expect(staleSignIn401('{"code":"X402_SIGN_IN_EXPIRED"}')).toBe(true);
    expect(staleSignIn401('{"code":"X402_SIGN_IN_NONCE_REUSED"}')).toBe(true);
    expect(staleSignIn401('{"code":"X402_SIGN_IN_INVALID_SIGNATURE"}')).toBe(false);
    expect(staleSignIn401("not json")).toBe(false);
  });

  it("in-band: an overload or an outage said mid-stream is transient; a refusal or a stale attestation is not", () => {
    const stream = new StreamError("in-band", { status: 200 });
    const overloaded = new ModelOverloadedError("overloaded", { cause: stream, retryAfterMs: 10 });
    expect(inBandOverload(overloaded)).toBe(true);
    expect(transientInBand(overloaded)).toBe(true);
    // an overloaded 429 (no stream under it) was the stack's to retry
    expect(inBandOverload(new ModelOverloadedError("overloaded", { status: 429 }))).toBe(false);
    expect(transientInBand(new ModelOverloadedError("overloaded", { status: 429 }))).toBe(false);
    expect(transientInBand(new InBandStreamError("outage", { status: 200, transient: true }))).toBe(true);
    expect(transientInBand(new InBandStreamError("stale", { status: 200, transient: false }))).toBe(false);
    expect(transientInBand(new ServiceError("other"))).toBe(false);
  });

  it("x402 routes: a route's 429 is waited out, a 409 is a payment settling", () => {
    expect(routeRateLimited429(429)).toBe(true);
    expect(routeRateLimited429(402)).toBe(false);
    expect(settling409(409)).toBe(true);
    expect(settling409(200)).toBe(false);
  });
});
