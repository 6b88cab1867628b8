/**
 * Fidelity of the x402 top-up against the published description, and the client fixes it revealed:
 * - the 402 bodies are as published (discovery with `authOptions`; a wallet short of credit gets `PAYMENT_REQUIRED`
 *   with `topUpInstructions` and `siwxChallenge`, the requirements only in the `PAYMENT-REQUIRED` header);
 * - by default the client pays exactly the offered requirement (x402 v2, `accepted` equal to the offer);
 * - an owner-chosen larger amount is one payment in the legacy v1 form the service's own SDK sends (Base), or a
 *   `PaymentPolicyError` before signing (Solana, where only the offer can be signed);
 * - requirements come from `POST /x402/top-up`: an inference 402's header is a hint, never signed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChatService } from "../../src/chat/chat-model.js";
import { PaymentPolicyError } from "../../src/http/errors.js";
import type { Emulator } from "langchain-service-emulator";
import type { PaymentEvent } from "../../src/x402/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import { SolanaWallet } from "../../src/solana/index.js";
import { chatBody, payer, startPaidEmulator, testPolicy, usdcBalance } from "../x402/helpers.js";
import {
  PAYEE_A,
  PAYEE_B,
  authorizationOf,
  completed,
  decodeHeader,
  json,
  offer,
  startHostile,
  toppedUp,
  type HostileServer,
} from "../hostile/server.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startPaidEmulator();
});
afterAll(async () => {
  await emu?.close();
});

const topUps = (address: string) => emu.account(address)?.entries.filter((e) => e.type === "TOP_UP") ?? [];

describe("402 bodies as published", () => {
  it("discovery (no credentials): x402 v2 with accepts, the sign-in extension and authOptions; the same requirements in PAYMENT-REQUIRED", async () => {
    const res = await fetch(`${emu.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: chatBody(),
    });
    expect(res.status).toBe(402);
    const body = (await res.json()) as Record<string, any>;
    expect(body.x402Version).toBe(2);
    expect(body.accepts.length).toBeGreaterThan(0);
    expect(body.extensions["sign-in-with-x"].supportedChains.length).toBeGreaterThan(0);
    expect(Object.keys(body.authOptions).sort()).toEqual(["apiKey", "x402Wallet"]);
    expect(decodeHeader(res.headers.get("payment-required")!).accepts).toEqual(body.accepts);
  });

  it("a wallet short of credit: PAYMENT_REQUIRED with topUpInstructions and siwxChallenge; requirements only in the header", async () => {
    const wallet = EvmWallet.random();
    const { createSiwxHeader } = await import("../../src/x402/index.js");
    const res = await fetch(`${emu.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "SIGN-IN-WITH-X": await createSiwxHeader(wallet, `${emu.url}/chat/completions`) },
      body: chatBody(),
    });
    expect(res.status).toBe(402);
    const body = (await res.json()) as Record<string, any>;
    expect(body).toMatchObject({ error: "Payment required", code: "PAYMENT_REQUIRED", reason: "insufficient_balance", minimumTopUpUsd: 5 });
    expect(body.topUpInstructions).toMatchObject({ tokenAddress: emu.chain!.usdc.address, tokenDecimals: 6, minimumAmountUsd: 5 });
    expect(body.siwxChallenge.info.nonce).toMatch(/^[0-9a-f]{16}$/);
    expect(body.accepts).toBeUndefined();
    const header = decodeHeader(res.headers.get("payment-required")!);
    expect(header.x402Version).toBe(2);
    // live: the header prices the suggested top-up ($10); the $5 offer to sign comes from POST /x402/top-up
    expect(header.accepts[0]).toMatchObject({ scheme: "exact", network: "eip155:8453", amount: "10000000" });
  });
});

describe("the client pays what the top-up endpoint offers", () => {
  it("by default: exactly the offered requirement ($5, x402 v2), not the 402's suggested $10", async () => {
    const wallet = payer(emu, 1);
    const before = await usdcBalance(emu, wallet.address);
    const events: PaymentEvent[] = [];
    const model = new ChatService({
      model: "emu-xs",
      baseUrl: emu.url,
      wallet,
      payment: testPolicy(emu),
      onPayment: (e) => events.push(e),
    });
    expect((await model.invoke("hello")).content).toBeTruthy();
    expect(topUps(wallet.address).map((e) => e.amount)).toEqual([5]);
    expect(before - (await usdcBalance(emu, wallet.address))).toBe(5_000_000n);
    expect(events.filter((e) => e.type === "payment.settled").map((e) => e.amountUsd)).toEqual([5]);
  });

  it("an owner's $25: one payment, in the legacy v1 form the service's own SDK sends; credited and moved exactly", async () => {
    const wallet = payer(emu, 2);
    const before = await usdcBalance(emu, wallet.address);
    const model = new ChatService({
      model: "emu-xs",
      baseUrl: emu.url,
      wallet,
      payment: testPolicy(emu, { amountUsd: 25, maxPerTopUpUsd: 25 }),
    });
    expect((await model.invoke("hello")).content).toBeTruthy();
    expect(topUps(wallet.address).map((e) => e.amount)).toEqual([25]);
    expect(before - (await usdcBalance(emu, wallet.address))).toBe(25_000_000n);
  });

  it("on Solana a larger amount than offered is refused before signing, with a clear PaymentPolicyError", async () => {
    const offered = (await (await fetch(`${emu.url}/x402/top-up`, { method: "POST" })).json()) as { accepts: { network: string }[] };
    const solana = offered.accepts.find((a) => a.network.startsWith("solana:"));
    if (!solana) return expect(offered.accepts.map((a) => a.network)).toEqual(["eip155:8453"]); // no LiteSVM here: the rail is off
    const events: PaymentEvent[] = [];
    const model = new ChatService({
      model: "emu-xs",
      baseUrl: emu.url,
      wallet: SolanaWallet.random(),
      payment: { amountUsd: 10, allowedNetworks: ["solana"] },
      solanaRpcUrl: `${emu.url}/x402/solana/rpc`,
      onPayment: (e) => events.push(e),
    });
    const err = await model.invoke("hello").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PaymentPolicyError);
    expect((err as PaymentPolicyError).rule).toBe("amount");
    expect((err as Error).message).toMatch(/only the offered amount/);
    expect(events.some((e) => e.type === "payment.signed")).toBe(false);
  });
});

describe("requirements come from the top-up endpoint", () => {
  let svc: HostileServer;
  afterAll(async () => {
    await svc?.close();
  });

  it("an inference 402 naming $50 to another payee is a hint: the wallet pays the top-up endpoint's $5 offer to its payee", async () => {
    let paid = false;
    svc = await startHostile((req, res) => {
      if (req.url.includes("/x402/top-up")) {
        if (!authorizationOf(req)) return json(res, { x402Version: 2, accepts: [offer({ payTo: PAYEE_A })] }, {}, 402);
        paid = true;
        return toppedUp(res, 5);
      }
      if (paid) return completed(res);
      // what an inference 402 says is not what the top-up endpoint checks
      const hint = { x402Version: 2, accepts: [offer({ payTo: PAYEE_B, amount: "50000000" })] };
      json(
        res,
        { error: "Payment required", code: "PAYMENT_REQUIRED", suggestedTopUpUsd: 50 },
        { "payment-required": Buffer.from(JSON.stringify(hint)).toString("base64") },
        402,
      );
    });
    const model = new ChatService({
      model: "m",
      baseUrl: svc.url,
      wallet: EvmWallet.random(),
      payment: { maxPerTopUpUsd: 100, maxPerPeriodUsd: 100 },
      retry: false,
      pacing: false,
    });
    expect((await model.invoke("hi")).content).toBe("ok");
    const signed = svc.to("/x402/top-up").filter((r) => authorizationOf(r));
    expect(signed).toHaveLength(1);
    expect(authorizationOf(signed[0]!)).toMatchObject({ to: PAYEE_A, value: "5000000" });
    const payload = decodeHeader(signed[0]!.headers["payment-signature"]);
    expect(payload.accepted).toEqual(offer({ payTo: PAYEE_A })); // the offer, exactly
  });
});
