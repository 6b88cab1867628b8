/**
 * Payment events: to the owner's `onPayment`, and to LangChain callbacks as the custom event `x402_payment`
 * when the request runs inside a LangChain run. `PaymentSpendHandler` sums what was spent.
 */
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";

export const PAYMENT_EVENT_NAME = "x402_payment";

export type PaymentEventType = "payment.requested" | "payment.signed" | "payment.settled" | "payment.refused" | "payment.failed";

export interface PaymentEvent {
  type: PaymentEventType;
  /** USD of the top-up (settled: what the service credited, when it said) */
  amountUsd?: number;
  network?: string;
  asset?: string;
  payTo?: string;
  /** the wallet that pays */
  payer?: string;
  /** settlement reference (tx hash or signature) */
  transaction?: string;
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

type Dispatch = (name: string, payload: unknown) => Promise<void>;
let dispatcher: Promise<Dispatch | undefined> | undefined;

function loadDispatcher(): Promise<Dispatch | undefined> {
  dispatcher ??= import("@langchain/core/callbacks/dispatch")
    .then((m) => m.dispatchCustomEvent as Dispatch)
    .catch(() => undefined);
  return dispatcher;
}

/** Sends an event to `onPayment` and, inside a LangChain run, to its callbacks. Never throws. */
export async function emitPaymentEvent(event: PaymentEvent, onPayment?: (event: PaymentEvent) => void, toLangChain = true): Promise<void> {
  try {
    onPayment?.(event);
  } catch {
    // an observer's failure must not change what happens to money
  }
  if (!toLangChain) return;
  const dispatch = await loadDispatcher();
  try {
    // outside a run there is no parent to report to: dispatchCustomEvent throws, which is fine
    await dispatch?.(PAYMENT_EVENT_NAME, event);
  } catch {
    /* no active run */
  }
}

/** A LangChain callback handler that sums x402 spend (settled top-ups) and counts refusals and failures. */
export class PaymentSpendHandler extends BaseCallbackHandler {
  name = "PaymentSpendHandler";
  totalUsd = 0;
  payments = 0;
  refused = 0;
  failed = 0;
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
  };
}
