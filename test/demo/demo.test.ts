/**
 * The one-command demo, run in-process: an agent with only a wallet hits 402, tops up once within its
 * policy, reads the chain through the tools and answers; the service's ledger and the chain agree.
 */
import { describe, expect, it } from "vitest";
import { main } from "../../examples/demo.js";

describe("npm run demo", () => {
  it("pays once, reads the chain, answers, and the money adds up", async () => {
    const lines: string[] = [];
    let streamed = "";
    const result = await main({ log: (l) => lines.push(l), write: (t) => (streamed += t) });
    const out = lines.join("\n");

    // the answer streamed and carries what the chain says
    expect(streamed.trim()).toBe(result.answer.trim());
    expect(result.answer).toContain("42.25");
    expect(result.answer).toContain("status success");
    expect(result.toolCalls).toEqual(expect.arrayContaining(["erc20_balance", "transaction_status"]));

    // exactly one payment, within the policy's $5 per top-up
    expect(result.payments).toHaveLength(1);
    expect(result.payments[0]!.amountUsd).toBe(5);
    expect(out).toContain("402 Payment Required");

    // ledger: paid == credited; on chain: the wallet paid exactly that to the treasury
    expect(result.ledger!.toppedUp).toBe(5);
    expect(result.onChain).toEqual({ walletBefore: "25.0", walletAfter: "20.0", treasuryGain: "5.0" });
    expect(result.creditLeftUsd).toBeCloseTo(5 - result.ledger!.charged, 6);
    // every model call says the credit left (live: read from GET /x402/balance, no X-Balance-Remaining), falling
    // call by call; after the last call it is what the service's balance says at the end
    const left = [...out.matchAll(/tokens, cost \$[\d.]+, credit left \$([\d.]+)/g)].map((m) => Number(m[1]));
    expect(left).toHaveLength(result.modelCalls);
    for (let i = 1; i < left.length; i++) expect(left[i]!).toBeLessThan(left[i - 1]!);
    expect(left[0]!).toBeLessThan(5);
    expect(left.at(-1)!).toBeCloseTo(result.creditLeftUsd!, 6);
    expect(result.modelCalls).toBeGreaterThanOrEqual(2);
    expect(result.tokens.input).toBeGreaterThan(0);
    expect(out).toMatch(/Summary[\s\S]*payments 1 \(\$5\.00\)/);
    // the agent's two parallel tool calls (crypto RPC, one at a time at the proxy) and its paid calls drew no 429
    expect(result.wire.requests).toBeGreaterThan(0);
    expect(result.wire.refused429).toBe(0);
    expect(out).toContain("refused with 429: 0");
    // it ends with its receipts proved against the service's ledger: nothing differs
    expect(result.reconciliation).toMatchObject({
      ok: true,
      unseenCharges: [],
      missingFromLedger: [],
      amountMismatches: [],
      unseenTopUps: [],
      missingTopUps: [],
    });
    expect(result.reconciliation!.run.charges).toBe(result.modelCalls + result.toolCalls.length); // each model call and each RPC read
    expect(result.reconciliation!.run.chargedUsd).toBeCloseTo(result.ledger!.charged, 6);
    expect(
      result.receipts
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).type),
    ).toContain("payment");
    expect(out).toMatch(/reconciled with the service's ledger: 0 difference\(s\)/);
  });
});
