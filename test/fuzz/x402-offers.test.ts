/**
 * 402 offers: what a 402 offers (`paymentSourceOf`, src/x402/top-up.ts, from the body or the base64 PAYMENT-REQUIRED
 * header), the policy's decision over its `accepts` (src/x402/policy.ts: v2 `amount`, v1 `maxAmountRequired`,
 * `maxTimeoutSeconds`, `extra`), and the whole automatic top-up over loopback with a real (random) wallet. Any offer
 * is a decision within the owner's rules or a typed refusal; nothing outside the rules is ever signed.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceClient } from "../../src/client.js";
import { EvmWallet } from "../../src/evm/index.js";
import { PaymentPolicyError } from "../../src/http/errors.js";
import { encodeBase64 } from "../../src/http/headers.js";
import { PaymentPolicy, USDC_BASE, USDC_SOLANA } from "../../src/x402/policy.js";
import { paymentSourceOf } from "../../src/x402/top-up.js";
import { jsonValue, nearValid, startLoopback, textMutation, timed, typedOutcome, typedSync, type Loopback } from "./bounds.js";

const PAYEE = "0x1111111111111111111111111111111111111111";
const SOL_PAYEE = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";

const v2Base = {
  scheme: "exact",
  network: "eip155:8453",
  amount: "5000000",
  asset: USDC_BASE,
  payTo: PAYEE,
  maxTimeoutSeconds: 300,
  extra: { name: "USD Coin", version: "2" },
};
const v2Solana = {
  scheme: "exact",
  network: "solana",
  amount: "10000000",
  asset: USDC_SOLANA,
  payTo: SOL_PAYEE,
  maxTimeoutSeconds: 300,
  extra: { feePayer: SOL_PAYEE },
};
const v1Base = {
  scheme: "exact",
  network: "base",
  maxAmountRequired: "5000000",
  resource: "https://api.example/x402/top-up",
  asset: USDC_BASE,
  payTo: PAYEE,
  maxTimeoutSeconds: 60,
  extra: { name: "USD Coin", version: "2" },
};

/** near-valid `accepts` arrays, with numbers the way a server might get them wrong */
const amountText = fc.oneof(
  fc.constantFrom("0", "-5", "5e6", "5000000.5", " 5000000", "0x10", "NaN", "", "1".repeat(41), "9".repeat(40), "00005"),
  fc.bigInt({ min: 0n, max: 10n ** 30n }).map(String),
);
const offer = fc.oneof(
  fc.constantFrom(v2Base, v2Solana, v1Base).chain(nearValid),
  fc
    .record({ base: fc.constantFrom(v2Base, v1Base, v2Solana), amount: amountText, timeout: jsonValue })
    .map(({ base, amount, timeout }) => ({
      ...base,
      ...("amount" in base ? { amount } : { maxAmountRequired: amount }),
      maxTimeoutSeconds: timeout,
    })),
  jsonValue,
);
const accepts = fc.array(offer, { maxLength: 4 });

describe("paymentSourceOf", () => {
  it("any body and PAYMENT-REQUIRED header give an offer whose accepts is a non-empty array or absent", () => {
    const header = fc.oneof(
      fc.constant(undefined),
      fc.string({ maxLength: 30 }),
      fc.base64String({ maxLength: 40 }),
      fc
        .record({ x402Version: jsonValue, accepts: fc.oneof(accepts, jsonValue), extensions: jsonValue })
        .map((v) => encodeBase64(JSON.stringify(v))),
      fc
        .record({ x402Version: fc.constant(2), accepts })
        .chain((v) => textMutation(JSON.stringify(v)))
        .map((t) => encodeBase64(t)),
    );
    const body = fc.oneof(
      jsonValue,
      fc.record({ x402Version: fc.constant(2), accepts: fc.oneof(accepts, jsonValue), resource: jsonValue }),
    );
    fc.assert(
      fc.property(
        body,
        header,
        timed(1_000, (b, h) => {
          const headers = new Headers();
          if (h !== undefined) headers.set("payment-required", h);
          const source = paymentSourceOf(b, headers);
          expect(source.accepts === undefined || (Array.isArray(source.accepts) && source.accepts.length > 0)).toBe(true);
        }),
      ),
      { numRuns: 500 },
    );
  });
});

describe("PaymentPolicy.candidates", () => {
  const policies = [
    new PaymentPolicy(),
    new PaymentPolicy({ amountUsd: 10, maxPerTopUpUsd: 20, allowedPayees: [PAYEE, SOL_PAYEE] }),
    new PaymentPolicy({ maxValiditySeconds: 30, preferredNetwork: "solana" }),
  ];

  it("decides within the owner's rules, or refuses with a PaymentPolicyError", () => {
    fc.assert(
      fc.property(
        accepts,
        fc.constantFrom(0, 1, 2),
        fc.constantFrom("eip155" as const, "solana" as const),
        timed(1_000, (offered, which, namespace) => {
          const policy = policies[which]!;
          const out = typedSync(() => policy.candidates(offered, { namespace }));
          if (!out.ok) {
            expect(out.error).toBeInstanceOf(PaymentPolicyError);
            return;
          }
          expect(out.value.length).toBeGreaterThan(0);
          for (const d of out.value) {
            expect(policy.allowedNetworks).toContain(d.network);
            expect(d.network.startsWith(`${namespace}:`)).toBe(true);
            expect(d.amountAtomic).toBeGreaterThan(0n);
            expect(d.requirement.amount).toBe(d.amountAtomic.toString());
            expect(d.amountUsd).toBeLessThanOrEqual(policy.maxPerTopUpUsd);
            expect(d.amountUsd).toBeGreaterThanOrEqual(d.minimumUsd);
            expect(Number.isInteger(d.requirement.maxTimeoutSeconds)).toBe(true);
            expect(d.requirement.maxTimeoutSeconds).toBeGreaterThanOrEqual(1);
            expect(d.requirement.maxTimeoutSeconds).toBeLessThanOrEqual(policy.maxValiditySeconds);
            expect(typeof d.requirement.extra === "object" && d.requirement.extra !== null).toBe(true);
            if (policy.allowedPayees) expect(policy.allowedPayees.map((p) => p.toLowerCase())).toContain(d.payTo.toLowerCase());
          }
        }),
      ),
      { numRuns: 800 },
    );
  });
});

describe("an automatic top-up over loopback", () => {
  let lb: Loopback;
  beforeAll(async () => {
    lb = await startLoopback();
  });
  afterAll(() => lb.close());

  it("a near-valid 402 and top-up offer end in an answer or a typed error; nothing off-policy is signed", async () => {
    const scenario = fc.record({
      // mostly a wallet-short 402 (the one a top-up follows), its other members altered
      chat402: fc.oneof(
        {
          weight: 3,
          arbitrary: nearValid({ error: "Payment required", minimumBalanceUsd: 0.1, topUpInstructions: { network: "base" } }).map((b) =>
            b && typeof b === "object" && !Array.isArray(b) ? { ...b, code: "PAYMENT_REQUIRED" } : b,
          ),
        },
        { weight: 1, arbitrary: jsonValue },
      ),
      // mostly offers a top-up can pay, so that the answer to the payment is reached
      topUpAccepts: fc.oneof(
        { weight: 2, arbitrary: fc.constant([v2Base]) },
        { weight: 2, arbitrary: nearValid([v2Solana, v2Base]) },
        { weight: 1, arbitrary: accepts },
      ),
      inHeader: fc.boolean(),
      // the answer to the signed payment: the live success and refusal shapes, altered
      paid: fc.record({
        status: fc.constantFrom(200, 200, 200, 400, 402, 500, 503),
        body: fc.oneof(
          nearValid({ success: true, data: { walletAddress: "0x", amountCredited: 5, newBalance: 5, paymentId: "p" } }),
          nearValid({ error: "SETTLEMENT_FAILED", message: "no funds moved" }),
          jsonValue,
        ),
        receipt: fc.option(
          fc.oneof(
            nearValid({ success: true, network: "eip155:8453", transaction: "0xabc" }).map((r) => encodeBase64(JSON.stringify(r) ?? "")),
            fc.string({ maxLength: 20 }),
          ),
        ),
      }),
    });
    await fc.assert(
      fc.asyncProperty(scenario, async ({ chat402, topUpAccepts, inHeader, paid }) => {
        const signed: string[] = [];
        let chats = 0;
        lb.handler = (req, res) => {
          const path = (req.url ?? "").split("?")[0]!;
          if (path.endsWith("/x402/top-up")) {
            const payment = req.headers["payment-signature"] ?? req.headers["x-402-payment"];
            if (typeof payment === "string") {
              signed.push(payment);
              res.writeHead(paid.status, {
                "content-type": "application/json",
                ...(paid.receipt ? { "payment-response": paid.receipt } : {}),
              });
              res.end(JSON.stringify(paid.body) ?? "");
              return;
            }
            const offerBody = { x402Version: 2, accepts: topUpAccepts };
            res.writeHead(402, {
              "content-type": "application/json",
              ...(inHeader ? { "payment-required": encodeBase64(JSON.stringify(offerBody)) } : {}),
            });
            res.end(JSON.stringify(inHeader ? { error: "Payment required" } : offerBody));
            return;
          }
          if (path.includes("/x402/transactions/")) {
            res.writeHead(200, { "content-type": "application/json" });
            res.end(JSON.stringify({ success: true, data: [], pagination: { limit: 50, offset: 0, hasMore: false } }));
            return;
          }
          if (path.includes("/x402/balance/")) {
            res.writeHead(200, { "content-type": "application/json" });
            res.end(JSON.stringify({ success: true, data: { balanceUsd: 0, canConsume: false } }));
            return;
          }
          chats++;
          if (chats === 1) {
            res.writeHead(402, { "content-type": "application/json" });
            res.end(JSON.stringify(chat402) ?? "");
            return;
          }
          res.writeHead(200, { "content-type": "application/json" });
          res.end("{}");
        };
        const client = new ServiceClient({
          baseUrl: lb.url,
          wallet: EvmWallet.random(),
          payment: { allowedPayees: [PAYEE] },
          topUp: { topUpTimeoutMs: 2_000, maxResends: 0, resendDelayMs: 1 },
          retry: false,
          pacing: false,
          abuseGuard: false,
        });
        await typedOutcome(() => client.request("/chat/completions", { body: {} }), 4_000);
        // at most one payment, and only to the allowed payee on Base, within the default $20 cap
        expect(signed.length).toBeLessThanOrEqual(1);
        for (const header of signed) {
          const payload = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
          const auth = payload.payload?.authorization;
          expect(auth.to.toLowerCase()).toBe(PAYEE);
          expect(BigInt(auth.value)).toBeLessThanOrEqual(20_000_000n);
        }
      }),
      { numRuns: 15 },
    );
  });
});
