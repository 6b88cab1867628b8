/**
 * A person approves each payment before the agent's wallet signs it. The agent is a LangGraph graph with a
 * checkpointer; its wallet's `PaymentPolicy` has an `approve` that calls LangGraph's `interrupt()`: when the credit
 * runs out and the service answers 402, the run pauses at the payment with the offer (amount, network, asset,
 * payee) and nothing signed. The person's answer resumes it (`Command({ resume })`): yes signs and pays exactly
 * what was shown, then the question is answered; no ends the run with nothing paid.
 *
 * The policy is strict (deny by default): only the listed payee and asset are paid, nothing is pinned on first use.
 *
 *   npm run example:approve-payments                # asks on the terminal (y/n); without one, APPROVE=yes|no
 *   SERVICE_BASE_URL=https://.../api/v1 WALLET_PRIVATE_KEY=0x... SERVICE_PAYEE=0x... npm run example:approve-payments
 */
import { createInterface } from "node:readline/promises";
import { pathToFileURL } from "node:url";
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { Command, END, MemorySaver, MessagesAnnotation, START, StateGraph, interrupt } from "@langchain/langgraph";
import { ChatService, PaymentPolicy, PaymentPolicyError, USDC_BASE, type PaymentApprovalRequest, type PaymentEvent } from "../src/index.js";
import { startEmulator } from "langchain-service-emulator";
import { EvmWallet } from "../src/evm/index.js";

/** The person's answer to one offer: true pays it. */
export type Approver = (offer: PaymentApprovalRequest) => boolean | Promise<boolean>;

export interface Options {
  /** the person; default: the terminal (y/n), or APPROVE=yes|no where there is none */
  approver?: Approver;
  log?: (line: string) => void;
}

export interface Result {
  /** the offers the run paused at */
  offers: PaymentApprovalRequest[];
  answers: boolean[];
  /** the agent's last message */
  finalMessage: string;
  payments: PaymentEvent[];
  /** embedded run: USD the emulator's ledger credited to the wallet */
  toppedUpUsd?: number;
}

async function terminalApprover(offer: PaymentApprovalRequest): Promise<boolean> {
  if (!process.stdin.isTTY) return (process.env.APPROVE ?? "yes").toLowerCase().startsWith("y");
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return (await rl.question(`  pay $${offer.amountUsd.toFixed(2)} to ${offer.payTo} on ${offer.network}? [y/n] `))
      .trim()
      .toLowerCase()
      .startsWith("y");
  } finally {
    rl.close();
  }
}

export async function main(options: Options = {}): Promise<Result> {
  const log = options.log ?? console.log;
  const approver = options.approver ?? terminalApprover;
  let baseUrl = process.env.SERVICE_BASE_URL;
  const emulator = baseUrl ? undefined : await startEmulator({ chain: true });
  try {
    let wallet: EvmWallet;
    let payee: string;
    if (emulator) {
      baseUrl = emulator.url;
      wallet = new EvmWallet(emulator.chain!.accounts[1]!.privateKey); // a funded account of the local chain
      payee = emulator.chain!.treasury;
    } else {
      const key = process.env.WALLET_PRIVATE_KEY;
      const listed = process.env.SERVICE_PAYEE;
      if (!key || !listed)
        throw new Error("set WALLET_PRIVATE_KEY and SERVICE_PAYEE (the service's USDC payee) to run against SERVICE_BASE_URL");
      wallet = new EvmWallet(key);
      payee = listed;
    }

    // Deny by default: the payee and the asset are listed; every payment is put to the person first. Inside a
    // graph node, interrupt() pauses the run here (the error it throws passes through the client unchanged), and
    // on resume returns the person's answer.
    const policy = new PaymentPolicy({
      strict: true,
      allowedPayees: [payee],
      allowedAssets: [{ network: "eip155:8453", asset: USDC_BASE }],
      maxPerTopUpUsd: 5,
      maxPerPeriodUsd: 10,
      approve: (offer) => interrupt<PaymentApprovalRequest, boolean>(offer) === true,
    });
    const payments: PaymentEvent[] = [];
    const model = new ChatService({
      baseUrl,
      model: process.env.SERVICE_MODEL ?? "emu-s",
      wallet,
      payment: policy,
      onPayment: (e) => payments.push(e),
      maxTokens: 64,
    });

    const agent = new StateGraph(MessagesAnnotation)
      .addNode("agent", async (state) => {
        try {
          return { messages: [await model.invoke(state.messages)] };
        } catch (err) {
          // the person said no: the run ends here, with nothing paid
          if (err instanceof PaymentPolicyError && err.rule === "approval")
            return { messages: [new AIMessage("The payment was not approved, so I stopped: nothing was paid.")] };
          throw err;
        }
      })
      .addEdge(START, "agent")
      .addEdge("agent", END)
      .compile({ checkpointer: new MemorySaver() });

    const config = { configurable: { thread_id: `approve-${Date.now()}` } };
    const question = "In one sentence: why do agents need spending limits?";
    log(`wallet ${wallet.address}; policy: strict, payee ${payee} only, every payment approved by a person`);
    log(`question: ${question}`);
    const offers: PaymentApprovalRequest[] = [];
    const answers: boolean[] = [];
    let state = await agent.invoke({ messages: [new HumanMessage(question)] }, config);
    // each pause is one offer; the answer resumes the run at the payment
    for (let pauses = 0; ; pauses++) {
      const pending = (state as { __interrupt__?: { value: PaymentApprovalRequest }[] }).__interrupt__;
      if (!pending?.length) break;
      if (pauses >= 3) throw new Error("the run keeps asking: stopping");
      const offer = pending[0]!.value;
      offers.push(offer);
      log(`[paused] the agent wants to pay $${offer.amountUsd.toFixed(2)} (${offer.reason})`);
      log(`         to ${offer.payTo} on ${offer.network}, asset ${offer.asset}, from ${offer.wallet}`);
      const answer = await approver(offer);
      answers.push(answer);
      log(`[person] ${answer ? "approved" : "declined"}`);
      state = await agent.invoke(new Command({ resume: answer }), config);
    }
    const messages = (state as { messages: BaseMessage[] }).messages;
    const finalMessage = String(messages.at(-1)?.content ?? "");
    log(`answer: ${finalMessage}`);
    const settled = payments.filter((e) => e.type === "payment.settled").length;
    log(`payments settled: ${settled}; signed: ${payments.filter((e) => e.type === "payment.signed").length}`);
    const toppedUpUsd = emulator
      ? (emulator.account(wallet.address)?.entries ?? []).filter((e) => e.type === "TOP_UP").reduce((s, e) => s + e.amount, 0)
      : undefined;
    if (toppedUpUsd !== undefined) log(`service ledger: topped up $${toppedUpUsd.toFixed(2)}`);
    return { offers, answers, finalMessage, payments, toppedUpUsd };
  } finally {
    await emulator?.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
}
