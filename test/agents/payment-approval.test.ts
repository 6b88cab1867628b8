/**
 * `paymentApprovalMiddleware`: the wallet's `PaymentPolicy` asks through the agent run's `interrupt()`. Against the
 * live emulator and its local chain: a `createAgent` run with a checkpointer pauses at the $5 offer with nothing
 * signed; `Command({ resume: true })` pays exactly that and the agent answers; `false` ends the run with a final
 * message, nothing signed, nothing credited. Outside such a run the same `approve` refuses.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgent } from "langchain";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, MemorySaver } from "@langchain/langgraph";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { ChatService, ConfigurationError, PaymentPolicy, PaymentPolicyError, USDC_BASE, type PaymentEvent } from "../../src/index.js";
import { paymentApprovalMiddleware } from "../../src/agents/index.js";
import { EvmWallet } from "../../src/evm/index.js";

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ chain: true });
});
afterAll(async () => {
  await emu?.close();
});

/** A fresh funded wallet of the local chain each time, so each run starts with no credit. */
let next = 2;
function setUp() {
  const approval = paymentApprovalMiddleware();
  const wallet = new EvmWallet(emu.chain!.accounts[next++]!.privateKey);
  const policy = new PaymentPolicy({
    strict: true,
    allowedPayees: [emu.chain!.treasury],
    allowedAssets: [{ network: "eip155:8453", asset: USDC_BASE }],
    maxPerTopUpUsd: 5,
    maxPerPeriodUsd: 10,
    approve: approval.approve,
  });
  const payments: PaymentEvent[] = [];
  const model = new ChatService({
    baseUrl: emu.url,
    model: "emu-s",
    wallet,
    payment: policy,
    onPayment: (e) => payments.push(e),
    maxTokens: 32,
  });
  const agent = createAgent({ model, tools: [], middleware: [approval], checkpointer: new MemorySaver() });
  const credited = () => (emu.account(wallet.address)?.entries ?? []).filter((e) => e.type === "TOP_UP").reduce((s, e) => s + e.amount, 0);
  return { agent, model, payments, credited };
}

type State = { messages: BaseMessage[]; __interrupt__?: { value: Record<string, unknown> }[] };
const question = { messages: [new HumanMessage("In one sentence: why do agents need spending limits?")] };

describe("paymentApprovalMiddleware", () => {
  it("pauses the run at the payment with the offer, nothing signed; resumed with true it pays exactly that and the agent answers", async () => {
    const { agent, payments, credited } = setUp();
    const config = { configurable: { thread_id: "approve-yes" } };
    const paused = (await agent.invoke(question, config)) as State;
    const offer = paused.__interrupt__?.[0]?.value;
    expect(offer).toMatchObject({
      type: "payment_approval",
      amountUsd: 5,
      network: "eip155:8453",
      payTo: emu.chain!.treasury,
      reason: expect.stringContaining("402"),
    });
    expect(payments.filter((e) => e.type === "payment.signed")).toHaveLength(0);
    const done = (await agent.invoke(new Command({ resume: true }), config)) as State;
    expect(done.__interrupt__ ?? []).toHaveLength(0);
    expect(payments.filter((e) => e.type === "payment.signed")).toHaveLength(1);
    expect(credited()).toBe(5);
    expect(String(done.messages.at(-1)!.content)).toMatch(/spending limits/);
  });

  it("resumed with false, the run ends with a final message: nothing signed, nothing credited", async () => {
    const { agent, payments, credited } = setUp();
    const config = { configurable: { thread_id: "approve-no" } };
    const paused = (await agent.invoke(question, config)) as State;
    expect(paused.__interrupt__?.[0]?.value).toMatchObject({ type: "payment_approval", amountUsd: 5 });
    const done = (await agent.invoke(new Command({ resume: false }), config)) as State;
    const final = done.messages.at(-1)!;
    expect(AIMessage.isInstance(final)).toBe(true);
    expect(String(final.content)).toMatch(/^Stopped: a payment was not approved, so nothing was paid/);
    expect(payments.filter((e) => e.type === "payment.signed")).toHaveLength(0);
    expect(credited()).toBe(0);
  });

  it("outside a run with the middleware, approve refuses (deny by default): a direct call's payment is a PaymentPolicyError, nothing signed", async () => {
    const { model, payments } = setUp();
    const err = await model.invoke("hello").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PaymentPolicyError);
    expect((err as PaymentPolicyError).rule).toBe("approval");
    expect(payments.filter((e) => e.type === "payment.signed")).toHaveLength(0);
    expect(() => paymentApprovalMiddleware({ onRefused: "later" as never })).toThrow(ConfigurationError);
  });
});
