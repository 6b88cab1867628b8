/**
 * `SpendLog`: the receipts of a run, one record per payment and per charge, that can be proved against the
 * service's own ledger (`reconcile`). It is a LangChain callback handler (`model.invoke(x, { callbacks: [log] })`,
 * an agent run's callbacks: it sees every payment and charge the run causes) and an option of every face
 * (`spendLog`: every request of that face). Records are plain objects; `toJSONL()` writes one per line.
 */
import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { PAYMENT_EVENT_NAME } from "../x402/event-name.js";
import type { ChargeRecord, PaymentRecord, SpendRecord } from "./receipts.js";
import { reconcileLog, type LedgerReader, type Reconciliation } from "./reconcile.js";

export type { ChargeRecord, PaymentRecord, SpendRecord } from "./receipts.js";

interface PaymentEventLike {
  type: string;
  amountUsd?: number;
  creditedUsd?: number;
  network?: string;
  asset?: string;
  payTo?: string;
  payer?: string;
  transaction?: string;
  nonce?: string;
  at?: number;
}

export class SpendLog extends BaseCallbackHandler {
  name = "SpendLog";
  /** when the log was made: `reconcile` reads the ledger from here on */
  readonly startedAt: number;
  readonly #records: SpendRecord[] = [];
  /** a payment event reaches the log by several paths (the face's option, the run's callbacks): counted once */
  readonly #seen = new WeakSet<object>();

  constructor() {
    super();
    this.startedAt = Date.now();
  }

  /** Every record, oldest first (a copy). */
  get records(): SpendRecord[] {
    return [...this.#records];
  }
  get charges(): ChargeRecord[] {
    return this.#records.filter((r): r is ChargeRecord => r.type === "charge");
  }
  get payments(): PaymentRecord[] {
    return this.#records.filter((r): r is PaymentRecord => r.type === "payment");
  }

  /** Sums: USD charged as the run saw it (known costs), and USD paid into credit. */
  totals(): { chargedUsd: number; paidUsd: number; charges: number; payments: number } {
    let nano = 0;
    for (const c of this.charges) nano += Math.round(((c.costUsd ?? 0) + (c.costDiem ?? 0)) * 1e9);
    let paid = 0;
    for (const p of this.payments) paid += Math.round(p.amountUsd * 1e6);
    return { chargedUsd: nano / 1e9, paidUsd: paid / 1e6, charges: this.charges.length, payments: this.payments.length };
  }

  /** @internal the fetch stack records each metered request here */
  recordCharge(record: Omit<ChargeRecord, "type" | "at">): void {
    this.#records.push({ type: "charge", at: new Date().toISOString(), ...record });
  }

  /** Records a settled top-up from a payment event (`onPayment`, or the run's `x402_payment` custom event). */
  recordPaymentEvent(event: PaymentEventLike): void {
    if (!event || typeof event !== "object" || this.#seen.has(event)) return;
    this.#seen.add(event);
    if (event.type !== "payment.settled" || typeof event.amountUsd !== "number") return;
    this.#records.push({
      type: "payment",
      at: new Date(event.at ?? Date.now()).toISOString(),
      amountUsd: event.amountUsd,
      creditedUsd: event.creditedUsd,
      payTo: event.payTo,
      network: event.network,
      asset: event.asset,
      nonce: event.nonce,
      transaction: event.transaction,
      wallet: event.payer,
    });
  }

  override handleCustomEvent(eventName: string, data: unknown): void {
    if (eventName === PAYMENT_EVENT_NAME) this.recordPaymentEvent(data as PaymentEventLike);
  }

  /** The records, one JSON object a line (undefined members left out). */
  toJSONL(): string {
    return this.#records.map((r) => JSON.stringify(r)).join("\n") + (this.#records.length ? "\n" : "");
  }

  /**
   * Proves the records against the service's ledger (`GET /x402/transactions`, every page, from `startedAt`):
   * what the service charged that the run never saw, what the run saw that the ledger lacks, amounts that differ
   * by more than a millionth of a dollar, and top-ups on either side alone. `client` is a wallet `ServiceClient`.
   */
  reconcile(client: LedgerReader, options: { marginMs?: number; signal?: AbortSignal } = {}): Promise<Reconciliation> {
    return reconcileLog(this.records, this.startedAt, client, options);
  }
}
