/**
 * Credentials against a hostile service: its redirects never carry a key, a sign-in or a payment to another
 * host (point 5), and an API key has one abuse budget however its clients spell their options (point 8).
 */
import { describe, expect, it, vi } from "vitest";
import { ChatService } from "../../src/chat/chat-model.js";
import { AbuseBlockError, BadRequestError, PaymentFailedError, RedirectError } from "../../src/http/errors.js";
import { createServiceFetch } from "../../src/stack.js";
import { withX402 } from "../../src/x402/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import {
  CREDENTIAL_HEADERS,
  PAYEE_A,
  authorizationOf,
  completed,
  json,
  offer,
  paymentRequired,
  hostileServers,
  toppedUp,
  type RecordedRequest,
} from "./server.js";

const hostile = hostileServers();

const CODES = [301, 302, 303, 307, 308] as const;
const quick = { topUp: { topUpTimeoutMs: 400, maxResends: 1, resendDelayMs: 10 }, retry: false as const, pacing: false as const };
const isTopUp = (url: string) => url.split("?")[0]!.endsWith("/x402/top-up");
const redirect = (res: Parameters<typeof json>[0], code: number, location: string) => {
  res.writeHead(code, { location, "content-type": "text/plain" });
  res.end("moved");
};
/** The credential or payment headers a recorded request carried. */
const credentialsOf = (r: RecordedRequest) => CREDENTIAL_HEADERS.filter((h) => r.headers[h] !== undefined);

type Face = "apiKey" | "wallet";
function model(face: Face, url: string) {
  return face === "apiKey"
    ? new ChatService({ model: "m", baseUrl: url, apiKey: "sk-hostile-test-key", ...quick })
    : new ChatService({ model: "m", baseUrl: url, wallet: EvmWallet.random(), payment: { allowedPayees: [PAYEE_A] }, ...quick });
}

describe("5. credentials never leave the origin, redirects included", () => {
  for (const code of CODES) {
    for (const face of ["apiKey", "wallet"] as const) {
      it(`${code} to another host (${face}): refused with RedirectError, nothing reaches the other host`, async () => {
        const foreign = await hostile((_req, res) => completed(res));
        const svc = await hostile((_req, res) => redirect(res, code, `${foreign.url}/chat/completions`));
        const err = await model(face, svc.url)
          .invoke("hi")
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(RedirectError);
        expect((err as RedirectError).targetOrigin).toBe(foreign.origin);
        expect(String(err)).not.toContain("sk-hostile");
        expect(foreign.requests).toHaveLength(0);
      });

      it(`${code} within the service's origin (${face}): followed, with a fresh credential`, async () => {
        const svc = await hostile((req, res) => {
          if (req.url.includes("hop=1")) return completed(res);
          redirect(res, code, "/api/v1/chat/completions?hop=1");
        });
        const msg = await model(face, svc.url).invoke("hi");
        expect(msg.content).toBe("ok");
        const [first, hop] = svc.requests;
        expect(hop!.method).toBe(code === 307 || code === 308 ? "POST" : "GET");
        if (face === "apiKey") {
          expect(hop!.headers.authorization).toBe("Bearer sk-hostile-test-key");
        } else {
          // a SIWX header is single use: the hop carries a new one
          expect(hop!.headers["sign-in-with-x"]).toBeTypeOf("string");
          expect(hop!.headers["sign-in-with-x"]).not.toBe(first!.headers["sign-in-with-x"]);
        }
      });
    }

    it(`${code} on a top-up to another host: the payment goes nowhere else and is never re-signed`, async () => {
      const foreign = await hostile((_req, res) => toppedUp(res, 5));
      const svc = await hostile((req, res) => {
        if (!isTopUp(req.url)) return paymentRequired(res, [offer()]);
        if (!authorizationOf(req)) return json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
        redirect(res, code, `${foreign.url}/x402/top-up`);
      });
      const err = await model("wallet", svc.url)
        .invoke("hi")
        .catch((e: unknown) => e);
      // a redirect after the payment was sent leaves its outcome unclear: kept, never re-signed
      expect(err).toBeInstanceOf(PaymentFailedError);
      expect(foreign.requests).toHaveLength(0);
      const nonces = svc
        .to("/x402/top-up")
        .filter((r) => authorizationOf(r))
        .map((r) => authorizationOf(r)!.nonce);
      expect(nonces.length).toBeGreaterThanOrEqual(1);
      expect(new Set(nonces).size).toBe(1);
    });

    it(`${code} on a top-up within the origin: followed; the payment goes along only while the request is kept`, async () => {
      let paid = false;
      const svc = await hostile((req, res) => {
        if (!isTopUp(req.url)) return paid ? completed(res) : paymentRequired(res, [offer()]);
        if (req.url.includes("hop=1")) {
          paid = true;
          return toppedUp(res, 5);
        }
        if (!authorizationOf(req)) return json(res, { x402Version: 2, accepts: [offer()] }, {}, 402);
        redirect(res, code, "/api/v1/x402/top-up?hop=1");
      });
      const msg = await model("wallet", svc.url).invoke("hi");
      expect(msg.content).toBe("ok");
      const hop = svc.requests.find((r) => r.url.includes("hop=1"))!;
      const keeps = code === 307 || code === 308;
      expect(hop.method).toBe(keeps ? "POST" : "GET");
      expect(hop.headers["payment-signature"] !== undefined).toBe(keeps);
      expect(hop.headers["sign-in-with-x"]).toBeTypeOf("string");
      // one signature in all
      const nonces = svc.requests.filter((r) => authorizationOf(r)).map((r) => authorizationOf(r)!.nonce);
      expect(new Set(nonces).size).toBe(1);
    });
  }

  it("withX402 around a plain fetch: signs only the service's origin and refuses its cross-origin redirects", async () => {
    const foreign = await hostile((_req, res) => completed(res));
    const svc = await hostile((_req, res) => redirect(res, 307, `${foreign.url}/chat/completions`));
    const f = withX402(fetch, { wallet: EvmWallet.random(), policy: { allowedPayees: [PAYEE_A] }, baseUrl: svc.url });
    const err = await f(`${svc.url}/chat/completions`, { method: "POST", body: "{}" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedirectError);
    expect(foreign.requests).toHaveLength(0);
    // a request of its own to another host goes unsigned
    expect((await f(`${foreign.url}/chat/completions`, { method: "POST", body: "{}" })).status).toBe(200);
    expect(credentialsOf(foreign.requests[0]!)).toEqual([]);
  });

  it("a request without credentials follows redirects as fetch does", async () => {
    const foreign = await hostile((_req, res) => json(res, { data: [] }));
    const svc = await hostile((_req, res) => redirect(res, 302, `${foreign.url}/models`));
    const previous = process.env.SERVICE_API_KEY;
    delete process.env.SERVICE_API_KEY;
    try {
      const f = createServiceFetch({ baseUrl: svc.url, retry: false, pacing: false });
      const res = await f(`${svc.url}/models`);
      expect(await res.json()).toEqual({ data: [] });
    } finally {
      if (previous !== undefined) process.env.SERVICE_API_KEY = previous;
    }
    expect(foreign.requests).toHaveLength(1);
  });
});

describe("8. one abuse budget per credential", () => {
  /** Every request fails with a 400, which the service counts toward its block (more than 20 in 30 s). */
  const failing = () => hostile((_req, res) => json(res, { error: "bad" }, {}, 400));

  it("two clients on one API key whose abuseGuard options differ only in form stay under the service's block together", async () => {
    const svc = await failing();
    const a = new ChatService({ model: "m", baseUrl: svc.url, apiKey: "k-form", retry: false, pacing: false, abuseGuard: {} });
    const b = new ChatService({
      model: "m",
      baseUrl: `${svc.url}/`,
      apiKey: "k-form",
      retry: false,
      pacing: false,
      abuseGuard: { maxFailures: 20, windowMs: 30_000 },
    });
    const outcomes: unknown[] = [];
    for (let i = 0; i < 15; i++) {
      outcomes.push(await a.invoke("x").catch((e: unknown) => e));
      outcomes.push(await b.invoke("x").catch((e: unknown) => e));
    }
    expect(svc.requests.length).toBe(20); // the 21st failure would trip the service's block
    expect(outcomes.filter((e) => e instanceof BadRequestError)).toHaveLength(20);
    const refused = outcomes.filter((e) => e instanceof AbuseBlockError) as AbuseBlockError[];
    expect(refused).toHaveLength(10);
    expect(refused.every((e) => e.source === "client")).toBe(true);
  });

  it("conflicting limits resolve to the strictest, with one warning; another key keeps its own budget", async () => {
    const svc = await failing();
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    try {
      const loose = new ChatService({
        model: "m",
        baseUrl: svc.url,
        apiKey: "k-strict",
        retry: false,
        pacing: false,
        abuseGuard: { maxFailures: 20 },
      });
      const strict = new ChatService({
        model: "m",
        baseUrl: svc.url,
        apiKey: "k-strict",
        retry: false,
        pacing: false,
        abuseGuard: { maxFailures: 5 },
      });
      new ChatService({ model: "m", baseUrl: svc.url, apiKey: "k-strict", retry: false, pacing: false, abuseGuard: { maxFailures: 7 } });
      expect(warn.mock.calls.filter((c) => String(c[0]).includes("abuseGuard"))).toHaveLength(1);
      expect(String(warn.mock.calls[0]![0])).not.toContain("k-strict");
      for (let i = 0; i < 8; i++) await loose.invoke("x").catch(() => undefined);
      expect(svc.requests).toHaveLength(5);
      expect(await strict.invoke("x").catch((e: unknown) => e)).toBeInstanceOf(AbuseBlockError);
      const other = new ChatService({ model: "m", baseUrl: svc.url, apiKey: "k-other", retry: false, pacing: false });
      expect(await other.invoke("x").catch((e: unknown) => e)).toBeInstanceOf(BadRequestError);
      expect(svc.requests).toHaveLength(6);
    } finally {
      warn.mockRestore();
    }
  });
});
