/** PaymentPolicy: every rule refuses before anything is signed, and names itself. Pure unit tests. */
import { describe, expect, it } from "vitest";
import { ConfigurationError, PaymentPolicyError } from "../../src/http/errors.js";
import { MemoryStore } from "../../src/store/memory.js";
import { PaymentPolicy, USDC_BASE, USDC_SOLANA } from "../../src/x402/policy.js";
import { BASE_MAINNET, SOLANA_MAINNET } from "../../src/x402/wallets.js";

const PAYEE = "0x1111111111111111111111111111111111111111";
const base = (over: Record<string, unknown> = {}) => ({
  scheme: "exact",
  network: BASE_MAINNET,
  amount: "5000000",
  asset: USDC_BASE,
  payTo: PAYEE,
  maxTimeoutSeconds: 300,
  extra: { name: "USD Coin", version: "2" },
  ...over,
});
const evm = { namespace: "eip155" as const };

function refusal(fn: () => unknown): PaymentPolicyError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(PaymentPolicyError);
    return err as PaymentPolicyError;
  }
  throw new Error("expected a PaymentPolicyError");
}

describe("PaymentPolicy.decide", () => {
  it("pays real USDC on Base exactly as offered (x402 v2) by default, never under the offer", () => {
    const policy = new PaymentPolicy();
    const d = policy.decide([base()], evm);
    expect(d.amountUsd).toBe(5);
    expect(d.form).toBe("v2");
    expect(d.requirement.amount).toBe("5000000");
    expect(d.offered).toEqual(base());
    // an owner's amount under the service's minimum is raised to the minimum
    expect(new PaymentPolicy({ amountUsd: 1 }).decide([base()], evm).amountUsd).toBe(5);
    expect(new PaymentPolicy({ amountUsd: 1 }).decide([base()], evm).form).toBe("v2");
  });

  it("an owner-chosen larger amount is one legacy v1 payment on Base, and refused before signing on Solana", () => {
    const d = new PaymentPolicy({ amountUsd: 7.25 }).decide([base()], evm);
    expect(d.requirement.amount).toBe("7250000");
    expect(d.form).toBe("v1");
    const solana = {
      scheme: "exact",
      network: SOLANA_MAINNET,
      amount: "5000000",
      asset: USDC_SOLANA,
      payTo: "8qUL23aSj7mDWdoLMXGHFvnVCT9wd7jXcysiekroADEL",
      maxTimeoutSeconds: 300,
      extra: { feePayer: "BFK9TLC3edb13K6v4YyH3DwPb5DSUpkWvb7XnqCL9b4F" },
    };
    const err = refusal(() => new PaymentPolicy({ amountUsd: 10 }).decide([solana], { namespace: "solana" }));
    expect(err.rule).toBe("amount");
    expect(new PaymentPolicy().decide([solana], { namespace: "solana" }).form).toBe("v2");
  });

  it("the validity is clamped in what is signed, while `accepted` stays the offer", () => {
    const d = new PaymentPolicy({ maxValiditySeconds: 60 }).decide([base()], evm);
    expect(d.requirement.maxTimeoutSeconds).toBe(60);
    expect(d.offered.maxTimeoutSeconds).toBe(300);
  });

  it("refuses an unknown asset by default (the emulator's token must be listed)", () => {
    const err = refusal(() => new PaymentPolicy().decide([base({ asset: "0x2222222222222222222222222222222222222222" })], evm));
    expect(err.rule).toBe("asset");
    const allowed = new PaymentPolicy({ allowedAssets: [{ network: "base", asset: "0x2222222222222222222222222222222222222222" }] });
    expect(allowed.decide([base({ asset: "0x2222222222222222222222222222222222222222" })], evm).asset).toMatch(/^0x2222/);
  });

  it("refuses a payee that is not on the allow-list", () => {
    const policy = new PaymentPolicy({ allowedPayees: ["0x3333333333333333333333333333333333333333"] });
    expect(refusal(() => policy.decide([base()], evm)).rule).toBe("payee");
    // EVM addresses compare case-insensitively
    expect(new PaymentPolicy({ allowedPayees: [PAYEE.toUpperCase().replace("0X", "0x")] }).decide([base()], evm).payTo).toBe(PAYEE);
  });

  it("refuses a chain that is not allowed, and a rail the wallet cannot pay on", () => {
    expect(refusal(() => new PaymentPolicy().decide([base({ network: "eip155:1" })], evm)).rule).toBe("network");
    const solanaOnly = [base({ network: SOLANA_MAINNET, asset: USDC_SOLANA, payTo: "8qUL23aSj7mDWdoLMXGHFvnVCT9wd7jXcysiekroADEL" })];
    expect(refusal(() => new PaymentPolicy().decide(solanaOnly, evm)).rule).toBe("wallet");
    expect(new PaymentPolicy().decide(solanaOnly, { namespace: "solana" }).network).toBe(SOLANA_MAINNET);
  });

  it("refuses a minimum over the cap, an absurd amount and a malformed one", () => {
    expect(refusal(() => new PaymentPolicy({ maxPerTopUpUsd: 20 }).decide([base({ amount: "50000000" })], evm)).rule).toBe("maxPerTopUp");
    expect(refusal(() => new PaymentPolicy().decide([base({ amount: `1${"0".repeat(30)}` })], evm)).rule).toBe("maxPerTopUp");
    expect(refusal(() => new PaymentPolicy().decide([base({ amount: "-5" })], evm)).rule).toBe("amount");
    expect(refusal(() => new PaymentPolicy().decide([base({ amount: "5e6" })], evm)).rule).toBe("amount");
    expect(refusal(() => new PaymentPolicy().decide([base({ scheme: "upto" })], evm)).rule).toBe("scheme");
    expect(refusal(() => new PaymentPolicy().decide([], evm)).rule).toBe("noRequirements");
  });

  it("reports the rule of the candidate that got furthest, and prefers the owner's rail", () => {
    const policy = new PaymentPolicy({ allowedPayees: ["0x3333333333333333333333333333333333333333"] });
    const err = refusal(() => policy.decide([base({ network: "eip155:1" }), base()], evm));
    expect(err.rule).toBe("payee");
    const other = "0x4444444444444444444444444444444444444444";
    const two = [base(), base({ network: "eip155:84532", asset: other })];
    const prefers = new PaymentPolicy({
      allowedNetworks: ["base", "eip155:84532"],
      allowedAssets: [USDC_BASE, other],
      preferredNetwork: "eip155:84532",
    });
    expect(prefers.decide(two, evm).network).toBe("eip155:84532");
  });

  it("reads legacy v1 requirements (`maxAmountRequired`, network `base`)", () => {
    const v1 = { scheme: "exact", network: "base", maxAmountRequired: "6000000", asset: USDC_BASE, payTo: PAYEE, extra: {} };
    const d = new PaymentPolicy().decide([v1], evm);
    expect(d.network).toBe(BASE_MAINNET);
    expect(d.amountUsd).toBe(6);
  });
});

describe("PaymentPolicy.authorize (decide + reserve in one step of the store)", () => {
  const W = "0x00000000000000000000000000000000000000a1";
  const ctx = (store: MemoryStore, extra = {}) => ({ ...evm, walletAddress: W, store, ...extra });
  const refusedAsync = async (p: Promise<unknown>) => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PaymentPolicyError);
    return err as PaymentPolicyError;
  };

  it("caps the sum of top-ups over a rolling period", async () => {
    let now = 1_000_000;
    const store = new MemoryStore();
    const policy = new PaymentPolicy({ maxPerPeriodUsd: 25, periodMs: 60_000, now: () => now });
    await policy.authorize([base()], ctx(store, { amountUsd: 10 }));
    await policy.authorize([base()], ctx(store, { amountUsd: 10 }));
    expect(await policy.spentUsd(undefined, store)).toBe(20);
    expect(await policy.spentUsd({ address: W }, store)).toBe(20);
    expect((await refusedAsync(policy.authorize([base()], ctx(store, { amountUsd: 10 })))).rule).toBe("maxPerPeriod");
    now += 60_001; // the first two roll off
    expect(await policy.spentUsd(undefined, store)).toBe(0);
    await policy.authorize([base()], ctx(store, { amountUsd: 10 }));
    expect(await policy.spentUsd(undefined, store)).toBe(10);
  });

  it("releases a reservation when nothing was signed", async () => {
    const store = new MemoryStore();
    const policy = new PaymentPolicy({ maxPerPeriodUsd: 10 });
    await (await policy.authorize([base()], ctx(store, { amountUsd: 10 }))).release();
    expect(await policy.spentUsd(undefined, store)).toBe(0);
    await policy.authorize([base()], ctx(store, { amountUsd: 10 }));
    expect((await refusedAsync(policy.authorize([base()], ctx(store, { amountUsd: 10 })))).rule).toBe("maxPerPeriod");
  });

  it("dry-run decides and reports but refuses to go further", async () => {
    const store = new MemoryStore();
    const policy = new PaymentPolicy({ dryRun: true });
    const err = await refusedAsync(policy.authorize([base()], ctx(store)));
    expect(err.rule).toBe("dryRun");
    expect(err.message.toLowerCase()).toContain(PAYEE.toLowerCase());
    expect(await policy.spentUsd(undefined, store)).toBe(0);
  });

  it("rejects contradictory options up front", () => {
    expect(() => new PaymentPolicy({ amountUsd: 50, maxPerTopUpUsd: 20 })).toThrow(ConfigurationError);
    expect(() => new PaymentPolicy({ maxPerTopUpUsd: 200, maxPerPeriodUsd: 100 })).toThrow(ConfigurationError);
    expect(new PaymentPolicy({ maxPerPeriodUsd: 10 }).maxPerTopUpUsd).toBe(10);
    expect(() => new PaymentPolicy({ amountUsd: -1 })).toThrow(ConfigurationError);
    expect(() => new PaymentPolicy({ allowedNetworks: [] })).toThrow(ConfigurationError);
  });
});
