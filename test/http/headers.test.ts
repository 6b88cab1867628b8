import { describe, expect, it } from "vitest";
import {
  parseServiceHeaders,
  rateLimitResetAtMs,
  rateWindowsOf,
  capWindowOf,
  toBoolean,
  toNumber,
  encodeBase64,
  decodeBase64Json,
} from "../../src/http/headers.js";

describe("parseServiceHeaders", () => {
  const now = 1_700_000_000_000;
  const all = new Headers({
    "content-type": "application/json",
    "content-encoding": "gzip",
    "content-disposition": "attachment",
    date: "Sat, 21 Nov 2026 12:00:00 GMT",
    "cf-ray": "8a1b2c3d4e5f6071-EMU",
    "x-service-version": "20261121.120000",
    "x-service-timestamp": "2026-11-21T12:00:00.000Z",
    "x-service-host-name": "host-1",
    "x-service-model-id": "emu-m",
    "x-service-model-name": "Emu M",
    "x-service-model-router": "emu-router",
    "x-service-model-deprecation-warning": "going away",
    "x-service-model-deprecation-date": "2027-01-01",
    "x-ratelimit-limit-requests": "50",
    "x-ratelimit-remaining-requests": "49",
    "x-ratelimit-reset-requests": "1700000060",
    "x-ratelimit-limit-tokens": "750000",
    "x-ratelimit-remaining-tokens": "749000",
    "x-ratelimit-reset-tokens": "42",
    "x-ratelimit-type": "api_key",
    "x-pagination-limit": "10",
    "x-pagination-page": "2",
    "x-pagination-total": "35",
    "x-pagination-total-pages": "4",
    "x-service-balance-diem": "9.5",
    "x-service-balance-usd": "100.25",
    "x-balance-remaining": "4.990000",
    "x-service-is-blurred": "false",
    "x-service-is-content-violation": "true",
    "x-service-is-adult-model-content-violation": "false",
    "x-service-contains-minor": "false",
    "x-service-middleface-version": "1.2.3",
    "x-service-mobile-version": "4.5.6",
    "x-service-request-timestamp-ms": "1700000000123",
    "x-service-control-instance": "ci-1",
    "x-auth-refreshed": "true",
    "x-retry-count": "2",
    "x-service-rpc-credits": "20",
    "x-service-rpc-cost-usd": "0.000014",
    "x-request-id": "req-1",
    "idempotent-replayed": "true",
  });

  it("parses every header of part 2.5 into typed values", () => {
    const h = parseServiceHeaders(all, "service", now);
    expect(h).toEqual({
      contentType: "application/json",
      contentEncoding: "gzip",
      contentDisposition: "attachment",
      date: "Sat, 21 Nov 2026 12:00:00 GMT",
      // X-Request-ID before CF-RAY: the id the live guides say to quote
      requestId: "req-1",
      version: "20261121.120000",
      timestamp: "2026-11-21T12:00:00.000Z",
      hostName: "host-1",
      model: { id: "emu-m", name: "Emu M", router: "emu-router" },
      deprecation: { warning: "going away", date: "2027-01-01" },
      rateLimit: {
        limitRequests: 50,
        remainingRequests: 49,
        resetRequests: 1_700_000_060,
        limitTokens: 750_000,
        remainingTokens: 749_000,
        resetTokens: 42,
        resetRequestsAtMs: 1700000060000,
        resetTokensAtMs: now + 42_000,
        type: "api_key",
      },
      pagination: { limit: 10, page: 2, total: 35, totalPages: 4 },
      balance: { usd: 100.25, diem: 9.5, remainingUsd: 4.99 },
      contentPolicy: { isBlurred: false, isContentViolation: true, isAdultModelContentViolation: false, containsMinor: false },
      client: { middlefaceVersion: "1.2.3", mobileVersion: "4.5.6", requestTimestampMs: 1_700_000_000_123 },
      controlInstance: "ci-1",
      authRefreshed: true,
      retryCount: 2,
      rpc: { credits: 20, costUsd: 0.000014, requestId: "req-1", idempotentReplayed: true },
    });
  });

  it("reads brand-carrying headers under the configured brand only", () => {
    const h = parseServiceHeaders(new Headers({ "x-acme-version": "20260101.000000", "x-service-version": "x" }), "acme");
    expect(h.version).toBe("20260101.000000");
    expect(parseServiceHeaders(new Headers({ "x-acme-version": "1" })).version).toBeUndefined();
  });

  it("omits groups that are absent and ignores non-numeric numbers", () => {
    const h = parseServiceHeaders(new Headers({ "x-ratelimit-limit-requests": "lots", "cf-ray": "r" }));
    expect(h).toEqual({ requestId: "r" });
  });

  it("decodes x402 PAYMENT-REQUIRED and PAYMENT-RESPONSE headers", () => {
    const required = { x402Version: 2, accepts: [{ scheme: "exact", network: "eip155:8453" }] };
    const settled = { success: true, transaction: "0xabc", network: "eip155:8453", payer: "0x1" };
    const h = parseServiceHeaders(
      new Headers({
        "payment-required": encodeBase64(JSON.stringify(required)),
        "payment-response": encodeBase64(JSON.stringify(settled)),
      }),
    );
    expect(h.paymentRequired).toEqual(required);
    expect(h.paymentResponse).toEqual(settled);
    expect(decodeBase64Json("%%%not base64")).toBeUndefined();
  });
});

describe("scalar conversions", () => {
  it.each([
    ["12", 12],
    [" 1.5e-6 ", 1.5e-6],
    ["", undefined],
    ["abc", undefined],
    [null, undefined],
  ])("toNumber(%j) = %j", (input, expected) => expect(toNumber(input)).toBe(expected));
  it.each([
    ["true", true],
    ["FALSE", false],
    ["maybe", undefined],
  ])("toBoolean(%j) = %j", (input, expected) => expect(toBoolean(input)).toBe(expected));
});

describe("rateLimitResetAtMs: which window a 429 waits for", () => {
  const now = 1_790_000_000_000;
  const at = (h: Record<string, string>) => rateLimitResetAtMs(parseServiceHeaders(new Headers(h), undefined, now), now);
  const live = (remainingRequests: number, remainingTokens: number) => ({
    "x-ratelimit-limit-requests": "50",
    "x-ratelimit-remaining-requests": String(remainingRequests),
    "x-ratelimit-reset-requests": String(now + 60_000),
    "x-ratelimit-limit-tokens": "1000",
    "x-ratelimit-remaining-tokens": String(remainingTokens),
    "x-ratelimit-reset-tokens": String(now + 1_500),
  });

  it("a token limit (no tokens left, requests left) clears at x-ratelimit-reset-tokens (Unix ms), not the request reset", () => {
    expect(at(live(49, 0))).toBe(now + 1_500);
  });

  it("the seed's reset-tokens (seconds from now) is read the same way", () => {
    expect(
      at({ ...live(49, 0), "x-ratelimit-reset-requests": String(Math.ceil((now + 60_000) / 1000)), "x-ratelimit-reset-tokens": "2" }),
    ).toBe(now + 2_000);
  });

  it("a request limit clears at the request reset; both spent: the later of the two", () => {
    expect(at(live(0, 500))).toBe(now + 60_000);
    expect(at(live(0, 0))).toBe(now + 60_000);
    expect(at({ ...live(0, 0), "x-ratelimit-reset-requests": String(now + 1_000), "x-ratelimit-reset-tokens": String(now + 3_000) })).toBe(
      now + 3_000,
    );
  });

  it("retry-after still counts beside the token reset", () => {
    expect(at({ ...live(49, 0), "retry-after": "5" })).toBe(now + 5_000);
  });
});

describe("rateWindowsOf: the request and token windows pacing reads", () => {
  const now = 1_800_000_000_000;
  it("reads both windows, live resets in Unix ms marked exact", () => {
    const h = new Headers({
      "x-ratelimit-limit-requests": "20",
      "x-ratelimit-remaining-requests": "7",
      "x-ratelimit-reset-requests": String(now + 60_000),
      "x-ratelimit-limit-tokens": "4000",
      "x-ratelimit-remaining-tokens": "0",
      "x-ratelimit-reset-tokens": String(now + 1_500),
    });
    expect(rateWindowsOf(h, now)).toEqual({
      metered: true,
      requests: { limit: 20, remaining: 7, resetAt: now + 60_000, exact: true },
      tokens: { limit: 4000, remaining: 0, resetAt: now + 1_500, exact: true },
    });
  });
  it("seed resets (seconds from now) are not exact; a window missing one of its three headers is absent", () => {
    const h = new Headers({
      "x-ratelimit-limit-requests": "20",
      "x-ratelimit-remaining-requests": "7",
      "x-ratelimit-limit-tokens": "4000",
      "x-ratelimit-remaining-tokens": "9",
      "x-ratelimit-reset-tokens": "2",
    });
    expect(rateWindowsOf(h, now)).toEqual({
      metered: true,
      requests: undefined,
      tokens: { limit: 4000, remaining: 9, resetAt: now + 2_000, exact: false },
    });
  });
  it("no request limit (or an unreadable one): not metered", () => {
    expect(rateWindowsOf(new Headers(), now)).toEqual({ metered: false, requests: undefined, tokens: undefined });
    expect(rateWindowsOf(new Headers({ "x-ratelimit-limit-requests": "lots" }), now).metered).toBe(false);
  });
});

describe("capWindowOf: the crypto RPC proxy's cap pacing reads", () => {
  const now = 1_800_000_000_000;
  it("limit and remaining, with the reset in whichever unit it came", () => {
    expect(
      capWindowOf(
        new Headers({ "x-ratelimit-limit": "100", "x-ratelimit-remaining": "0", "x-ratelimit-reset": String((now + 30_000) / 1000) }),
        now,
      ),
    ).toEqual({
      limit: 100,
      remaining: 0,
      resetAt: now + 30_000,
    });
    expect(capWindowOf(new Headers({ "x-ratelimit-limit": "100", "x-ratelimit-remaining": "4" }), now)).toEqual({
      limit: 100,
      remaining: 4,
    });
  });
  it("none without both the limit and the remaining (the live error budget's lone remaining is not a cap)", () => {
    expect(capWindowOf(new Headers({ "x-ratelimit-remaining": "3", "x-ratelimit-resets": String(now) }), now)).toBeUndefined();
    expect(capWindowOf(new Headers({ "x-ratelimit-limit": "0x10", "x-ratelimit-remaining": "1" }), now)).toBeUndefined();
  });
});
