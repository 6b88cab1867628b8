import { describe, expect, it } from "vitest";
import {
  AbuseBlockError,
  AuthenticationError,
  BadRequestError,
  InsufficientBalanceError,
  PaymentRequiredError,
  ProOnlyModelError,
  RateLimitError,
  ServerError,
  UnexpectedStatusError,
} from "../../src/http/errors.js";
import { ABUSE_BLOCK_MESSAGE, errorFromResponse } from "../../src/http/status-errors.js";
import { parseServiceHeaders } from "../../src/http/headers.js";

const headers = parseServiceHeaders(new Headers({ "cf-ray": "ray-1", "x-ratelimit-reset-requests": "1700000060" }));

describe("errorFromResponse maps every condition of part 7", () => {
  it.each([
    [400, { error: "Invalid request", details: { model: ["Required"] } }, BadRequestError],
    [401, { error: "Authentication failed" }, AuthenticationError],
    [401, { error: "This model is available to Pro users only" }, ProOnlyModelError],
    [402, { error: "Insufficient balance", code: "INSUFFICIENT_BALANCE" }, InsufficientBalanceError],
    [402, { x402Version: 2, error: "Payment required", accepts: [{ scheme: "exact" }] }, PaymentRequiredError],
    [402, { error: "Payment required", code: "PAYMENT_REQUIRED", topUpInstructions: { step1: "..." } }, PaymentRequiredError],
    [429, { error: "Rate limit exceeded" }, RateLimitError],
    [429, { error: ABUSE_BLOCK_MESSAGE }, AbuseBlockError],
    [500, { error: "Internal server error" }, ServerError],
    [503, "<html>upstream down</html>", ServerError],
    [418, "teapot", UnexpectedStatusError],
  ] as const)("%i %j", (status, body, Type) => {
    const err = errorFromResponse(status, body, headers);
    expect(err).toBeInstanceOf(Type);
    expect(err.status).toBe(status);
    expect(err.body).toEqual(body);
    expect(err.requestId).toBe("ray-1");
    expect(err.message.startsWith(String(status))).toBe(true);
  });

  it("keeps 400 details, 402 variants, and the 429 reset time", () => {
    const bad = errorFromResponse(400, { error: "Invalid request", details: { temperature: ["too big"] } }, headers) as BadRequestError;
    expect(bad.details).toEqual({ temperature: ["too big"] });
    const discovery = errorFromResponse(402, { x402Version: 2, accepts: [{ a: 1 }] }, headers) as PaymentRequiredError;
    expect(discovery.variant).toBe("discovery");
    expect(discovery.accepts).toEqual([{ a: 1 }]);
    const credit = errorFromResponse(402, { code: "PAYMENT_REQUIRED", topUpInstructions: { step1: "x" } }, headers) as PaymentRequiredError;
    expect(credit.variant).toBe("insufficient_credit");
    expect(credit.topUpInstructions).toEqual({ step1: "x" });
    const limited = errorFromResponse(429, { error: "Rate limit exceeded" }, headers) as RateLimitError;
    expect(limited.resetAt?.getTime()).toBe(1_700_000_060_000);
    const blocked = errorFromResponse(429, { error: ABUSE_BLOCK_MESSAGE }, headers) as AbuseBlockError;
    expect(blocked.source).toBe("service");
  });

  it("gives a clear message for a non-JSON body", () => {
    const err = errorFromResponse(502, "Bad Gateway from proxy", headers);
    expect(err.message).toBe("502 Bad Gateway from proxy");
    expect(JSON.parse(JSON.stringify(err))).toMatchObject({ name: "ServerError", status: 502, requestId: "ray-1" });
  });
});
