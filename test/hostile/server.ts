/**
 * A hostile (or merely strict) service on loopback, scripted per test: it lies in its 402s, redirects, reports
 * false credit, answers "already used" or times out, whatever the test needs. Real HTTP on 127.0.0.1; every
 * request is recorded (method, url, headers, parsed body), so a test checks what reached the wire.
 *
 * Two servers on two ports are two origins: `startHostile()` twice gives a service and a foreign host.
 */
import type { ServerResponse } from "node:http";
import { afterEach } from "vitest";
import { startFixtureServer, json, type FixtureServer, type RecordedRequest, type Script } from "../chat/fixture-server.js";
import { USDC_BASE } from "../../src/x402/policy.js";

export { json, type RecordedRequest, type Script };

export interface HostileServer extends FixtureServer {
  /** scheme + host + port, e.g. http://127.0.0.1:40123 */
  origin: string;
  /** requests whose path ends with `suffix` */
  to(suffix: string): RecordedRequest[];
  /** requests that carried any credential or payment header */
  credentialed(): RecordedRequest[];
}

export const CREDENTIAL_HEADERS = [
  "authorization",
  "sign-in-with-x",
  "x-sign-in-with-x",
  "payment-signature",
  "x-payment",
  "x-402-payment",
];

export async function startHostile(script: Script = (_req, res) => json(res, {})): Promise<HostileServer> {
  const s = await startFixtureServer(script);
  const origin = new URL(s.url).origin;
  return Object.assign(s, {
    origin,
    to: (suffix: string) => s.requests.filter((r) => r.url.split("?")[0]!.endsWith(suffix)),
    credentialed: () => s.requests.filter((r) => CREDENTIAL_HEADERS.some((h) => r.headers[h] !== undefined)),
  }) as HostileServer;
}

/** A starter of hostile servers for one test file: each is closed after the test that started it. */
export function hostileServers(): (script?: Script) => Promise<HostileServer> {
  const servers: HostileServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  return async (script) => {
    const s = await startHostile(script);
    servers.push(s);
    return s;
  };
}

export const PAYEE_A = "0x1111111111111111111111111111111111111111";
export const PAYEE_B = "0x2222222222222222222222222222222222222222";

/** One x402 v2 requirement on Base for real USDC, $5 by default. */
export function offer(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    scheme: "exact",
    network: "eip155:8453",
    amount: "5000000",
    asset: USDC_BASE,
    payTo: PAYEE_A,
    maxTimeoutSeconds: 300,
    extra: { name: "USD Coin", version: "2" },
    ...over,
  };
}

export function encodeHeader(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64");
}

export function decodeHeader<T = any>(value: string | string[] | undefined): T | undefined {
  if (typeof value !== "string") return undefined;
  return JSON.parse(Buffer.from(value, "base64").toString("utf8")) as T;
}

/** A 402 as the service sends it to a wallet short of credit: requirements in the PAYMENT-REQUIRED header. */
export function paymentRequired(res: ServerResponse, accepts: Record<string, unknown>[], body: Record<string, unknown> = {}): void {
  json(
    res,
    { error: "Payment required", code: "PAYMENT_REQUIRED", ...body },
    { "payment-required": encodeHeader({ x402Version: 2, resource: { url: "/api/v1/chat/completions" }, accepts }) },
    402,
  );
}

/** A successful top-up answer; `creditedUsd` is whatever the server claims. */
export function toppedUp(res: ServerResponse, creditedUsd: number, extra: Record<string, unknown> = {}): void {
  json(
    res,
    { success: true, data: { walletAddress: "0x", amountCredited: creditedUsd, newBalance: creditedUsd, paymentId: "pay_1", ...extra } },
    {
      "payment-response": encodeHeader({ success: true, network: "eip155:8453", transaction: "0xabc" }),
    },
  );
}

/** The signed EIP-3009 authorization in a recorded top-up request. */
export function authorizationOf(
  req: RecordedRequest,
): { from: string; to: string; value: string; validAfter: string; validBefore: string; nonce: string } | undefined {
  const header = req.headers["payment-signature"] ?? req.headers["x-payment"] ?? req.headers["x-402-payment"];
  return decodeHeader<any>(header as string | undefined)?.payload?.authorization;
}

/** A chat completion 200. */
export function completed(res: ServerResponse, headers: Record<string, string> = {}): void {
  json(
    res,
    {
      id: "chatcmpl-h",
      object: "chat.completion",
      created: 1,
      model: "h-model",
      choices: [{ index: 0, finish_reason: "stop", logprobs: null, message: { role: "assistant", content: "ok" } }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    },
    headers,
  );
}
