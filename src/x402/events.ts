/**
 * Payment events: to the owner's `onPayment`, and to LangChain callbacks as the custom event `x402_payment`.
 * A request made by a LangChain run (ChatService, the tools) carries its run's listener, so the run's own
 * callbacks (`model.invoke(x, { callbacks: [handler] })`) see every payment it caused; other requests made
 * inside a run reach it through `dispatchCustomEvent`. `PaymentSpendHandler` sums what was spent.
 */
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
// The web entry: the Node one imports node:async_hooks at load. The run's config is read the way LangGraph's
// getConfig() reads it (src/runtime/run-context.ts installs the async context where the runtime has one).
import { dispatchCustomEvent } from "@langchain/core/callbacks/dispatch/web";
import { currentRunConfig } from "../runtime/run-context.js";

import { PAYMENT_EVENT_NAME } from "./event-name.js";
export { PAYMENT_EVENT_NAME };

export type PaymentEventType =
  | "payment.requested"
  | "payment.signed"
  | "payment.settled"
  | "payment.refused"
  | "payment.failed"
  /** something about a payment does not add up (e.g. the service credited another amount than was signed) */
  | "payment.warning";

/** Receives the events of the payments one request caused (a LangChain run's callbacks, for instance). */
export type PaymentEventListener = (event: PaymentEvent) => void | Promise<void>;

export interface PaymentEvent {
  type: PaymentEventType;
  /** USD of the top-up: what was signed (the service's claims never change it) */
  amountUsd?: number;
  /** USD the service says it credited (settled, warning) */
  creditedUsd?: number;
  network?: string;
  asset?: string;
  payTo?: string;
  /** the wallet that pays */
  payer?: string;
  /** settlement reference (tx hash or signature) */
  transaction?: string;
  /** the signed authorization's nonce (EVM; signed, settled) */
  nonce?: string;
  /** the policy rule that refused the payment */
  rule?: string;
  /** why it was refused or failed */
  reason?: string;
  /** the wallet's credit after the top-up, when the service said */
  balanceUsd?: number;
  /** how many times the same signed payment was re-sent */
  resends?: number;
  /** ms since epoch */
  at: number;
}

/**
 * Sends an event to `onPayment` and to LangChain: the request's own run listener when it has one, else the run
 * found in the async context (if any). Never throws.
 */
export async function emitPaymentEvent(
  event: PaymentEvent,
  onPayment?: (event: PaymentEvent) => void,
  toLangChain = true,
  listener?: PaymentEventListener,
): Promise<void> {
  try {
    onPayment?.(event);
  } catch {
    // an observer's failure must not change what happens to money
  }
  if (!toLangChain) return;
  try {
    if (listener) await listener(event);
    // outside a run there is no parent to report to
    else {
      const config = currentRunConfig();
      if (config) await dispatchCustomEvent(PAYMENT_EVENT_NAME, event, config);
    }
  } catch {
    /* no active run, or a failing callback */
  }
}

/** A LangChain callback handler that sums x402 spend (settled top-ups) and counts refusals and failures. */
export class PaymentSpendHandler extends BaseCallbackHandler {
  name = "PaymentSpendHandler";
  totalUsd = 0;
  payments = 0;
  refused = 0;
  failed = 0;
  /** payments whose credit the service reported differently from what was signed */
  warnings = 0;
  readonly events: PaymentEvent[] = [];

  override async handleCustomEvent(eventName: string, data: unknown): Promise<void> {
    if (eventName !== PAYMENT_EVENT_NAME) return;
    this.record(data as PaymentEvent);
  }

  /** Also usable directly as an `onPayment` observer. */
  record = (event: PaymentEvent): void => {
    this.events.push(event);
    if (event.type === "payment.settled") {
      this.payments++;
      this.totalUsd = Math.round((this.totalUsd + (event.amountUsd ?? 0)) * 1e6) / 1e6;
    } else if (event.type === "payment.refused") this.refused++;
    else if (event.type === "payment.failed") this.failed++;
    else if (event.type === "payment.warning") this.warnings++;
  };
}
