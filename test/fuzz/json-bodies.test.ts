/**
 * JSON bodies: the error answers (readBody, throwForStatus and errorFromResponse: src/http/responses.ts,
 * status-errors.ts, model-errors.ts) and the success answers of `ServiceClient.request()` and `ChatService.invoke()`
 * (wire-check.ts, completion.ts). Any status and any body, valid, near-valid (the service's own error shapes
 * altered), cut or not JSON at all, is a value or a typed error carrying the status.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceClient } from "../../src/client.js";
import { ChatService } from "../../src/chat/index.js";
import { ResponseTooLargeError, ServiceError } from "../../src/http/errors.js";
import { parseServiceHeaders } from "../../src/http/headers.js";
import { errorFromResponse } from "../../src/http/status-errors.js";
import { jsonValue, nearValid, startLoopback, textMutation, timed, typedOutcome, type Loopback } from "./bounds.js";

/** the error bodies the service sends (its spec part 7 and the live notes) */
const ERROR_BODIES: unknown[] = [
  { error: "Invalid request", details: { _errors: [], model: { _errors: ["bad"] } }, issues: [{ path: ["model"], message: "x" }] },
  {
    error: {
      message: "This model's maximum context length is 8192 tokens",
      type: "invalid_request_error",
      param: "messages",
      code: "context_length_exceeded",
    },
  },
  { error: "Authentication failed", code: "X402_SIGN_IN_EXPIRED" },
  { error: "This model is available to Pro users only" },
  { error: "Insufficient balance", code: "INSUFFICIENT_BALANCE" },
  {
    error: "Payment required",
    code: "PAYMENT_REQUIRED",
    currentBalanceUsd: 0.01,
    topUpInstructions: { step1: "a", receiverWallet: "0x1" },
  },
  { x402Version: 2, error: "Payment required", accepts: [{ scheme: "exact", network: "eip155:8453", amount: "5000000" }] },
  { error: "Specified model not found", request_id: "req_1" },
  { error: "No character could be found from the provided character_slug" },
  { code: "PAYLOAD_TOO_LARGE", error: "Request body exceeds the maximum allowed size." },
  { error: "The prompt violates the content policy", suggested_prompt: "a safer prompt" },
  { error: "Rate limit exceeded", customMessage: "100 requests per minute" },
  { error: "The model is currently overloaded. Please try again later." },
  { error: "Too many failed attempts (> 20) resulting in a non-success status code. Please wait 30s and try again." },
  { error: "Unsupported parameter: 'stop' is not supported with this model." },
  { error: "The model is offline" },
  "upstream connect error or disconnect/reset before headers",
  "",
];

const STATUSES = [400, 401, 402, 403, 404, 405, 409, 410, 413, 415, 422, 429, 451, 500, 502, 503, 504, 520, 599];
const status = fc.oneof(fc.constantFrom(...STATUSES), fc.integer({ min: 400, max: 599 }));
const errorBody = fc.oneof(fc.constantFrom(...ERROR_BODIES).chain(nearValid), jsonValue);

describe("errorFromResponse", () => {
  it("any status and body is a ServiceError with that status and a message", () => {
    const headers = parseServiceHeaders(new Headers({ "x-request-id": "r", "retry-after": "3" }));
    fc.assert(
      fc.property(
        status,
        errorBody,
        fc.boolean(),
        timed(1_000, (s, body, resent) => {
          const err = errorFromResponse(s, body, headers, { signInResent: resent });
          expect(err).toBeInstanceOf(ServiceError);
          expect(err.status).toBe(s);
          expect(typeof err.message).toBe("string");
          expect(err.message.length).toBeLessThan(2_000);
          // it serializes (an error that cannot be logged is no help)
          JSON.stringify(err);
        }),
      ),
      { numRuns: 800 },
    );
  });
});

describe("error messages of any length", () => {
  const headers = parseServiceHeaders(new Headers());
  it("a long error message is read in bounded time, at every status", () => {
    const message = fc.tuple(fc.constantFrom("a.", "a ", "é", "stop.", "x", "^1"), fc.integer({ min: 1_000, max: 20_000 }));
    fc.assert(
      fc.property(
        fc.constantFrom(400, 401, 402, 403, 404, 422, 429, 503),
        message,
        fc.constantFrom("error", "message"),
        timed(1_000, (s, [unit, n], key) => {
          const err = errorFromResponse(s, { [key]: unit.repeat(n) }, headers);
          expect(err.status).toBe(s);
          expect(err.message.length).toBeLessThan(2_000);
        }),
      ),
      { numRuns: 30 },
    );
  });

  // before: a 400 whose message was 40 KB of "a.a.a." took about 4 s (the "<field> is not supported by this model"
  // match backtracked at every word boundary: quadratic), and 400 KB several minutes
  it('a 400 with a 40 KB "a.a.a..." message is typed within a second', () => {
    const start = performance.now();
    const err = errorFromResponse(400, { error: "a.".repeat(20_000) }, headers);
    expect(err.status).toBe(400);
    expect(performance.now() - start).toBeLessThan(1_000);
  });
});

describe("over loopback", () => {
  let lb: Loopback;
  beforeAll(async () => {
    lb = await startLoopback();
  });
  afterAll(() => lb.close());

  const contentType = fc.constantFrom("application/json", "application/json; charset=utf-8", "text/plain", "text/html", "");

  it("ServiceClient.request(): any answer is a result or a typed error with its status", async () => {
    const client = new ServiceClient({ baseUrl: lb.url, apiKey: "k", retry: false, pacing: false, abuseGuard: false });
    const answer = fc.record({
      status: fc.oneof(status, fc.constantFrom(200, 201, 204)),
      text: fc.oneof(
        errorBody.map((b) => JSON.stringify(b) ?? ""),
        errorBody.chain((b) => textMutation(JSON.stringify(b) ?? "")),
      ),
      type: contentType,
    });
    await fc.assert(
      fc.asyncProperty(answer, async (a) => {
        lb.handler = (_req, res) => {
          res.writeHead(a.status, a.type ? { "content-type": a.type } : {});
          res.end(a.status === 204 ? undefined : a.text);
        };
        const out = await typedOutcome(() => client.request("/things"), 2_000);
        if (out.ok) expect(out.value.status).toBe(a.status);
        else if (a.status >= 400) expect(out.error.status).toBe(a.status);
      }),
      { numRuns: 80 },
    );
  });

  it("a body past maxResponseBytes ends in ResponseTooLargeError (a success) or its status's error (its body dropped)", async () => {
    const max = 4_096;
    const client = new ServiceClient({
      baseUrl: lb.url,
      apiKey: "k",
      retry: false,
      pacing: false,
      abuseGuard: false,
      maxResponseBytes: max,
    });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(200, 400, 402, 429, 500),
        fc.integer({ min: 1, max: 64 }),
        fc.boolean(),
        async (s, pieces, lengthKnown) => {
          let sent = 0;
          let stop = false;
          lb.handler = async (_req, res) => {
            const piece = Buffer.from(`${"é".repeat(1024)}`);
            res.on("close", () => {
              stop = true;
            });
            res.writeHead(s, {
              "content-type": "application/json",
              ...(lengthKnown ? { "content-length": String(piece.length * pieces) } : {}),
            });
            // a JSON string that goes on for `pieces` KiB-ish writes
            for (let i = 0; i < pieces && !stop; i++) {
              sent += piece.length;
              if (!res.write(piece)) await new Promise((r) => res.once("drain", r));
            }
            res.end();
          };
          const out = await typedOutcome(() => client.request("/things"), 3_000);
          if (pieces * 2048 > max) {
            expect(out.ok).toBe(false);
            // a success is refused at the cap; an error answer stays its status's typed error, its body dropped at the cap
            if (!out.ok && s === 200) expect(out.error).toBeInstanceOf(ResponseTooLargeError);
            if (!out.ok && s !== 200) {
              expect(out.error.status).toBe(s);
              expect(JSON.stringify(out.error.body ?? "").length).toBeLessThanOrEqual(max);
            }
          } else if (s !== 200) expect(!out.ok && out.error.status).toBe(s);
          expect(sent).toBeGreaterThan(0);
        },
      ),
      { numRuns: 25 },
    );
  });

  it("ChatService.invoke(): a near-valid completion is a message or a typed error", async () => {
    const valid = {
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: "m",
      choices: [
        {
          index: 0,
          finish_reason: "tool_calls",
          logprobs: null,
          message: {
            role: "assistant",
            content: "Hé😀llo ^1^",
            reasoning_content: "hm",
            reasoning_details: [{ type: "reasoning.text", text: "a" }],
            tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: '{"a":1}' } }],
          },
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8, completion_tokens_details: { reasoning_tokens: 1 } },
      cost: { usd: 0.001, diem: 0 },
      service_parameters: { enable_web_search: "auto", web_search_citations: [{ title: "t", url: "https://a.example" }] },
    };
    const model = new ChatService({ model: "m", apiKey: "k", baseUrl: lb.url, retry: false, abuseGuard: false, pacing: false });
    const answer = fc.oneof(
      { weight: 4, arbitrary: nearValid(valid).map((b) => JSON.stringify(b) ?? "") },
      { weight: 1, arbitrary: textMutation(JSON.stringify(valid)) },
    );
    await fc.assert(
      fc.asyncProperty(answer, async (text) => {
        lb.handler = (_req, res) => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(text);
        };
        const out = await typedOutcome(() => model.invoke("hi"), 2_000);
        if (out.ok) expect(typeof out.value.content === "string" || Array.isArray(out.value.content)).toBe(true);
      }),
      { numRuns: 80 },
    );
  });
});
