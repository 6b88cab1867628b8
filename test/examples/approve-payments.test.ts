/**
 * `npm run example:approve-payments`: a LangGraph agent whose wallet asks a person before every payment, paused
 * with `interrupt()` at the payment and resumed on the answer. Both answers are driven here, against the embedded
 * emulator and its local chain: yes pays exactly the offer shown and the question is answered; no ends the run
 * with nothing signed and nothing credited.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../../examples/approve-payments.js";
import type { PaymentApprovalRequest } from "../../src/index.js";

const ENV = ["SERVICE_BASE_URL", "SERVICE_MODEL", "WALLET_PRIVATE_KEY", "APPROVE"];
const saved: Record<string, string | undefined> = {};
beforeAll(() => {
  for (const name of ENV) {
    saved[name] = process.env[name];
    delete process.env[name];
  }
});
afterAll(() => {
  for (const name of ENV) if (saved[name] !== undefined) process.env[name] = saved[name];
});

describe("example: approve-payments", () => {
  it("yes: the run pauses once at the $5 offer, resumes, pays exactly that, and answers", async () => {
    const lines: string[] = [];
    const seen: PaymentApprovalRequest[] = [];
    const result = await main({ approver: (offer) => (seen.push(offer), true), log: (l) => lines.push(l) });
    expect(seen).toHaveLength(1);
    expect(result.offers).toEqual(seen);
    expect(seen[0]).toMatchObject({ amountUsd: 5, network: "eip155:8453", reason: expect.stringContaining("402") });
    expect(result.answers).toEqual([true]);
    expect(result.payments.filter((e) => e.type === "payment.signed")).toHaveLength(1);
    expect(result.toppedUpUsd).toBe(seen[0]!.amountUsd);
    expect(result.finalMessage).toMatch(/spending limits/);
    expect(lines.join("\n")).toMatch(/\[paused\] the agent wants to pay \$5\.00[\s\S]*\[person\] approved/);
  });

  it("no: the run ends with the agent saying so, nothing signed, nothing credited", async () => {
    const result = await main({ approver: () => false, log: () => {} });
    expect(result.offers).toHaveLength(1);
    expect(result.answers).toEqual([false]);
    expect(result.payments.filter((e) => e.type === "payment.signed")).toHaveLength(0);
    expect(result.toppedUpUsd).toBe(0);
    expect(result.finalMessage).toMatch(/not approved/);
  });
});
