/**
 * Wallet sign-in (SIWX): what the service answers to a sign-in (src/http/sign-in-refusals.ts: the 401's
 * `X402_SIGN_IN_*` code, whether a fresh header cures it, the advice in the AuthenticationError), the domain a
 * sign-in names (src/x402/sign-in-domain.ts), and the whole exchange over loopback with a real (random) wallet and
 * the service's `Date` header at any value (src/http/clock.ts feeds `issuedAt`). Any refusal is a typed error after
 * at most one re-signed attempt, each attempt with its own nonce and a valid `issuedAt`.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceClient } from "../../src/client.js";
import { EvmWallet } from "../../src/evm/index.js";
import { AuthenticationError, ConfigurationError } from "../../src/http/errors.js";
import { parseServiceHeaders } from "../../src/http/headers.js";
import { curedByFreshSignIn, signInAdvice } from "../../src/http/sign-in-refusals.js";
import { errorFromResponse } from "../../src/http/status-errors.js";
import { normalizeSignInDomain } from "../../src/x402/sign-in-domain.js";
import { jsonValue, nearValid, startLoopback, textMutation, timed, typedOutcome, typedSync, type Loopback } from "./bounds.js";

const CODES = [
  "X402_SIGN_IN_EXPIRED",
  "X402_SIGN_IN_NONCE_REUSED",
  "X402_SIGN_IN_FUTURE_TIMESTAMP",
  "X402_SIGN_IN_INVALID_SIGNATURE",
  "X402_SIGN_IN_DOMAIN_MISMATCH",
  "X402_SIGN_IN_PARSE_ERROR",
  "X402_SIGN_IN_UNSUPPORTED_CHAIN",
  "X402_SIGN_IN_INVALID_WALLET",
  "X402_INVALID_SIGN_IN",
];
const CURED = new Set(CODES.slice(0, 3));

const refusal = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...CODES).chain((code) => nearValid({ error: "Sign-in refused", code, details: "x" })) },
  { weight: 1, arbitrary: jsonValue },
);
const refusalText = fc.oneof(
  refusal.map((b) => JSON.stringify(b) ?? ""),
  fc.constantFrom(...CODES).chain((code) => textMutation(JSON.stringify({ error: "Sign-in refused", code }))),
  fc.string({ maxLength: 40 }).map((s) => `X402_SIGN_IN_${s}`),
);

describe("a refused sign-in's answer", () => {
  it("curedByFreshSignIn: true only for a JSON body whose code a fresh header cures", () => {
    fc.assert(
      fc.property(
        refusalText,
        timed(1_000, (text) => {
          const cured = curedByFreshSignIn(text);
          expect(typeof cured).toBe("boolean");
          if (cured) expect(CURED.has(JSON.parse(text).code)).toBe(true);
        }),
      ),
      { numRuns: 600 },
    );
  });

  it("the 401 is an AuthenticationError whose advice never repeats the body beyond its code", () => {
    const headers = parseServiceHeaders(new Headers());
    fc.assert(
      fc.property(refusal, fc.boolean(), (body, resent) => {
        const err = errorFromResponse(401, body, headers, { signInResent: resent });
        expect(err).toBeInstanceOf(AuthenticationError);
        const code = (body as { code?: unknown } | null)?.code;
        const advice = signInAdvice(typeof code === "string" ? code : undefined, resent);
        if (advice) expect(err.message).toContain(advice);
      }),
      { numRuns: 400 },
    );
  });
});

describe("normalizeSignInDomain", () => {
  it("any value is a host (with a port) or a ConfigurationError; a host normalizes to itself", () => {
    const value = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.domain(),
      fc.webUrl(),
      fc.tuple(fc.domain(), fc.integer({ min: 0, max: 99_999 })).map(([d, p]) => `${d}:${p}`),
      fc.constantFrom("[::1]:8080", "https://user:pw@api.example.ai", "api.example.ai/path", "API.Example.AI", " a.b ", "a..b", "-a.b"),
      jsonValue,
    );
    fc.assert(
      fc.property(
        value,
        timed(1_000, (v) => {
          const out = typedSync(() => normalizeSignInDomain(v));
          if (!out.ok) {
            expect(out.error).toBeInstanceOf(ConfigurationError);
            return;
          }
          expect(out.value).not.toMatch(/[/@?#\s]/);
          expect(normalizeSignInDomain(out.value)).toBe(out.value);
        }),
      ),
      { numRuns: 600 },
    );
  });
});

describe("over loopback with a wallet", () => {
  let lb: Loopback;
  beforeAll(async () => {
    lb = await startLoopback();
  });
  afterAll(() => lb.close());

  const dateHeader = fc.oneof(
    fc.constant(undefined),
    fc.date({ min: new Date(0), max: new Date(8.64e15), noInvalidDate: true }).map((d) => d.toUTCString()),
    fc.integer({ min: -3_600_000, max: 3_600_000 }).map((skew) => new Date(Date.now() + skew).toUTCString()),
    fc.constantFrom("garbage", "", "Fri, 31 Dec 275760 00:00:00 GMT", "Sat, 01 Jan -271821 00:00:00 GMT"),
  );

  it("a refused sign-in is a typed error after at most one re-signed attempt, each with its own nonce", async () => {
    const wallet = EvmWallet.random();
    await fc.assert(
      fc.asyncProperty(refusalText, dateHeader, async (text, date) => {
        const headersSeen: string[] = [];
        lb.handler = (req, res) => {
          const h = req.headers["sign-in-with-x"];
          if (typeof h === "string") headersSeen.push(h);
          res.writeHead(401, { "content-type": "application/json", ...(date ? { date } : {}) });
          res.end(text);
        };
        const client = new ServiceClient({ baseUrl: lb.url, wallet, retry: false, pacing: false, abuseGuard: false });
        const out = await typedOutcome(() => client.request("/chat/completions", { body: {} }), 3_000);
        expect(out.ok).toBe(false);
        if (!out.ok) expect(out.error).toBeInstanceOf(AuthenticationError);
        expect(headersSeen.length).toBeGreaterThanOrEqual(1);
        expect(headersSeen.length).toBeLessThanOrEqual(2);
        // a code a fresh header cures is signed again once (a moved clock may also be, whatever the code)
        if (curedByFreshSignIn(text)) expect(headersSeen.length).toBe(2);
        const payloads = headersSeen.map((h) => JSON.parse(Buffer.from(h, "base64").toString("utf8")));
        const nonces = payloads.map((p) => /Nonce: (\S+)/.exec(p.message)?.[1]);
        expect(new Set(nonces).size).toBe(payloads.length);
        for (const p of payloads) expect(Number.isFinite(Date.parse(/Issued At: (\S+)/.exec(p.message)![1]!))).toBe(true);
      }),
      { numRuns: 30 },
    );
  });
});
