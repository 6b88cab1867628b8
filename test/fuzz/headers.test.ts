/**
 * The response headers (src/http/headers.ts): `x-ratelimit-*` in its three families, `retry-after`, the balance,
 * pagination and pricing numbers, the booleans and the base64 `PAYMENT-*` headers. Arbitrary and near-valid values
 * parse without throwing; every number read is finite; every instant is one a `Date` can hold, so a `resetAt` built
 * from it is a valid date. The 429s built from them (src/http/status-errors.ts) keep those properties.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  capWindowOf,
  decodeBase64Json,
  encodeBase64,
  errorBudgetOf,
  parseServiceHeaders,
  rateLimitResetAtMs,
  rateWindowsOf,
  retryAfterMs,
  toBoolean,
  toNumber,
} from "../../src/http/headers.js";
import { errorFromResponse } from "../../src/http/status-errors.js";
import { ModelOverloadedError, RateLimitError, StreamError } from "../../src/http/errors.js";
import { typedStreamError } from "../../src/chat/stream-errors.js";
import { timed } from "./bounds.js";

/** the latest instant a Date can hold (ECMAScript's time range), either way from the epoch */
const MAX_DATE_MS = 8.64e15;
const NOW = 1_790_000_000_000;

/** header values: numbers in every spelling, near-numbers, dates, text (only characters a header may carry) */
const headerValue = fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: false }).map(String),
  fc.constantFrom(
    "0",
    "-0",
    "1e306",
    "-1e308",
    "1e308",
    "9e15",
    "1e13",
    "1e12",
    "999999999",
    "1000000000",
    "1790000060000",
    "1790000060",
    "42",
    "NaN",
    "Infinity",
    "-Infinity",
    "0x10",
    "1_000",
    " 12 ",
    "10, 10",
    ", 3",
    "1.5e-6",
    ".5",
    "5.",
    "+7",
    "e5",
    "true",
    "FALSE",
    "1",
    "",
    "Wed, 21 Oct 2015 07:28:00 GMT",
    "Fri, 31 Dec 275760 00:00:00 GMT",
    "Sat, 01 Jan -271821 00:00:00 GMT",
  ),
  fc.string({ unit: fc.constantFrom(..."0123456789.,-+eE xX:;abc"), maxLength: 24 }),
  fc.tuple(fc.integer({ min: 100, max: 4_000 }), fc.constantFrom("x", ".", "e", "")).map(([n, end]) => `${"9".repeat(n)}${end}`),
  fc.string({ unit: "grapheme-ascii", maxLength: 24 }).map((s) => s.replace(/[\r\n\0]/g, "")),
);

const NAMES = [
  "x-ratelimit-limit-requests",
  "x-ratelimit-remaining-requests",
  "x-ratelimit-reset-requests",
  "x-ratelimit-limit-tokens",
  "x-ratelimit-remaining-tokens",
  "x-ratelimit-reset-tokens",
  "x-ratelimit-type",
  "x-ratelimit-limit",
  "x-ratelimit-remaining",
  "x-ratelimit-reset",
  "x-ratelimit-resets",
  "retry-after",
  "x-pagination-limit",
  "x-pagination-page",
  "x-pagination-total",
  "x-pagination-total-pages",
  "x-service-balance-usd",
  "x-service-balance-diem",
  "x-balance-remaining",
  "x-service-is-blurred",
  "x-service-is-content-violation",
  "x-service-rpc-credits",
  "x-service-rpc-cost-usd",
  "idempotent-replayed",
  "x-retry-count",
  "x-auth-refreshed",
  "x-service-request-timestamp-ms",
  "payment-required",
  "payment-response",
  "x-request-id",
  "cf-ray",
];

/** a set of headers, as a plain record (so a counterexample prints): build it with `headersOf` */
const headerSet = fc.dictionary(fc.constantFrom(...NAMES), headerValue, { maxKeys: 12 });

function headersOf(d: Record<string, string>): Headers {
  const h = new Headers();
  for (const [k, v] of Object.entries(d)) {
    try {
      h.set(k, v);
    } catch {
      // a value Headers refuses never reaches a parser
    }
  }
  return h;
}

function finiteNumbers(value: unknown, path = "headers"): string[] {
  if (typeof value === "number") return Number.isFinite(value) ? [] : [`${path} = ${value}`];
  if (value && typeof value === "object") return Object.entries(value).flatMap(([k, v]) => finiteNumbers(v, `${path}.${k}`));
  return [];
}

const validInstant = (t: number | undefined) => t === undefined || (Number.isFinite(t) && Math.abs(t) <= MAX_DATE_MS);

describe("header parsing", () => {
  it("parseServiceHeaders: every number finite, every instant a valid Date", () => {
    fc.assert(
      fc.property(
        headerSet,
        timed(1_000, (d) => {
          const parsed = parseServiceHeaders(headersOf(d), undefined, NOW);
          expect(finiteNumbers({ ...parsed, paymentRequired: undefined, paymentResponse: undefined })).toEqual([]);
          const r = parsed.rateLimit;
          for (const t of [parsed.retryAfterAtMs, r?.resetRequestsAtMs, r?.resetTokensAtMs, r?.errorBudget?.resetsAtMs]) {
            expect(validInstant(t), `instant ${t}`).toBe(true);
          }
          expect(validInstant(rateLimitResetAtMs(parsed, NOW))).toBe(true);
        }),
      ),
      { numRuns: 800 },
    );
  });

  it("the pacing readings (rateWindowsOf, capWindowOf, errorBudgetOf) give finite figures and valid instants", () => {
    fc.assert(
      fc.property(headerSet, (d) => {
        const headers = headersOf(d);
        const w = rateWindowsOf(headers, NOW);
        const cap = capWindowOf(headers, NOW);
        const budget = errorBudgetOf(headers, NOW);
        expect(finiteNumbers({ w, cap, budget })).toEqual([]);
        for (const t of [w.requests?.resetAt, w.tokens?.resetAt, cap?.resetAt, budget?.resetsAtMs]) expect(validInstant(t)).toBe(true);
      }),
      { numRuns: 600 },
    );
  });

  it("toNumber, toBoolean, retryAfterMs: a finite value, a boolean, or undefined", () => {
    fc.assert(
      fc.property(fc.oneof(headerValue, fc.string({ maxLength: 40 })), (v) => {
        const n = toNumber(v);
        expect(n === undefined || Number.isFinite(n)).toBe(true);
        expect([true, false, undefined]).toContain(toBoolean(v));
        const wait = retryAfterMs(v, NOW);
        expect(wait === undefined || (Number.isFinite(wait) && wait >= 0 && validInstant(NOW + wait))).toBe(true);
      }),
      { numRuns: 800 },
    );
  });

  it("decodeBase64Json of any text, and of base64 of cut JSON, is a value or undefined", () => {
    const text = fc.oneof(
      fc.string({ maxLength: 60 }),
      fc.base64String({ maxLength: 60 }),
      fc.json({ maxDepth: 3 }).chain((j) => fc.nat(j.length).map((cut) => encodeBase64(j.slice(0, cut)))),
    );
    fc.assert(
      fc.property(text, (t) => {
        decodeBase64Json(t);
      }),
      { numRuns: 300 },
    );
  });

  it("a 429 built from them has a valid resetAt and a finite, non-negative retryAfterMs", () => {
    const body = fc.constantFrom(
      { error: "Rate limit exceeded" },
      { error: "The model is currently overloaded. Please try again later." },
      "overloaded",
      undefined,
    );
    fc.assert(
      fc.property(headerSet, body, (d, b) => {
        const err = errorFromResponse(429, b, parseServiceHeaders(headersOf(d)));
        expect(err).toBeInstanceOf(RateLimitError);
        const rl = err as RateLimitError;
        expect(rl.resetAt === undefined || Number.isFinite(rl.resetAt.getTime())).toBe(true);
        if (err instanceof ModelOverloadedError && err.retryAfterMs !== undefined) {
          expect(Number.isFinite(err.retryAfterMs) && err.retryAfterMs >= 0).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe("found by the properties above", () => {
  // before: the number pattern could split a run of digits anywhere, and backtracked over every split: 457 ms for a
  // header of 16000 digits and a letter (Node's header limit is 16 KB), read again by every consumer of the headers
  it("a 16 KB header of digits ending in a letter is refused in linear time", () => {
    const value = `${"1".repeat(16_000)}x`;
    const start = performance.now();
    expect(toNumber(value)).toBeUndefined();
    expect(performance.now() - start).toBeLessThan(100);
  });

  // before: retryAfterMs gave 1e16 ms, and `now + wait` was past what a Date holds (an Invalid Date resetAt)
  it('retry-after "1e13" (seconds) is a wait that stays a valid Date from now', () => {
    const wait = retryAfterMs("1e13", NOW)!;
    expect(Number.isFinite(new Date(NOW + wait).getTime())).toBe(true);
  });

  // before: Infinity ms, then a 429 whose resetAt was an Invalid Date (toISOString throws a RangeError)
  it('a 429 with retry-after "1e306" has a valid resetAt', () => {
    const err = errorFromResponse(
      429,
      { error: "Rate limit exceeded" },
      parseServiceHeaders(headersOf({ "retry-after": "1e306" }), undefined, NOW),
    );
    expect((err as RateLimitError).resetAt?.toISOString()).toMatch(/^\+?\d/);
  });

  // before: the Unix-ms reset was kept as sent, past the Date range
  it('x-ratelimit-reset-requests "9e15" is an instant a Date holds', () => {
    const parsed = parseServiceHeaders(headersOf({ "x-ratelimit-reset-requests": "9e15", "x-ratelimit-reset": "-1e308" }), undefined, NOW);
    expect(validInstant(parsed.rateLimit?.resetRequestsAtMs)).toBe(true);
    expect(validInstant(rateLimitResetAtMs(parsed, NOW))).toBe(true);
  });

  // before: an in-band `retry_after: 1e306` gave retryAfterMs Infinity and an Invalid Date resetAt
  it("an in-band model_overloaded with retry_after 1e306 has a finite wait and a valid resetAt", () => {
    const err = typedStreamError(new StreamError("x", { body: { error: { code: "model_overloaded", retry_after: 1e306 } } }), "");
    expect(err).toBeInstanceOf(ModelOverloadedError);
    expect(Number.isFinite((err as ModelOverloadedError).retryAfterMs)).toBe(true);
    expect(Number.isFinite((err as ModelOverloadedError).resetAt!.getTime())).toBe(true);
  });
});
