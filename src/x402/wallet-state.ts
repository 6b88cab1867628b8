/**
 * The money state of one wallet in a context (src/http/context.ts), shared by every controller, client and layer of it paying from it:
 * the top-up in flight, completed top-ups (the epoch), the signed payment whose outcome is unknown, the gate that
 * holds requests while the credit is unknown, and the last figure of its credit. Also how a pending payment is
 * written to (and read back from) the store, for another process of a fleet.
 */
import { SharedRegistry } from "../http/bounded.js";
import { contextKey, defaultServiceContext, type ServiceContext } from "../http/context.js";
import type { PendingPaymentRecord, TopUpEnd } from "../store/types.js";
import { BalanceFigure } from "./balance-figure.js";
import { walletScopeKey, type PaymentDecision, type PaymentPolicy } from "./policy.js";
import type { PendingPayment, TopUpResult, X402PaymentOptions } from "./types.js";
import type { PaymentEvent, PaymentEventListener } from "./events.js";
import type { PaymentStore } from "../store/types.js";
import { walletNamespace, type X402Wallet } from "./wallets.js";

/** The lease this process holds on the wallet's top-ups while one runs. */
export interface HeldLease {
  token: number;
  /** what the store is told when the top-up ends */
  end: TopUpEnd;
  /** the store still had this pending payment when the lease was taken */
  storedPending?: string;
}

/**
 * Money-flow state of one wallet in a context: shared by every client and layer of the context using that wallet. It lives
 * while a controller holds it, and while a signed payment's outcome is unknown even without one (`pending`).
 */
export class WalletState {
  inFlight?: Promise<TopUpResult | undefined>;
  /** the top-up in flight was asked for explicitly (`client.topUp(amount)`) */
  inFlightExplicit?: boolean;
  /** completed top-ups */
  epoch = 0;
  #pending?: PendingPayment;
  /** the registry of the context this state lives in: holds it while a payment is pending */
  readonly #registry: SharedRegistry<WalletState>;

  constructor(registry: SharedRegistry<WalletState>) {
    this.#registry = registry;
  }
  /** the wallet's credit as last learned, and whether it may have moved since (see balance.ts) */
  readonly balance = new BalanceFigure();
  /** the service served this wallet and no 402 came since: requests flow freely */
  creditOk = false;
  /** the store's lease while this process runs a top-up of the wallet */
  held?: HeldLease;
  /** the top-up endpoint's last requirements (to refuse a top-up the budget cannot fit without asking again) */
  lastAccepts?: { accepts: unknown[]; at: number };
  /**
   * While the credit is unknown (first use, or after a 402) one request goes alone and every other one waits
   * here; it resolves when that request (and the top-up it led to) is done: with undefined to go on, or with
   * the top-up's error for the waiters to throw (they would only draw 402s, and the service counts every
   * failure towards its abuse block).
   */
  gate?: Promise<Error | undefined>;

  /** a signed payment whose outcome is unknown: re-sent, never re-signed, so never forgotten while set */
  get pending(): PendingPayment | undefined {
    return this.#pending;
  }
  set pending(p: PendingPayment | undefined) {
    this.#pending = p;
    this.#registry.keep(this, p ? Number.POSITIVE_INFINITY : 0);
  }
}

/**
 * One state per wallet ADDRESS in a context: two wallet objects holding one key are one wallet (one single flight). Held
 * weakly (each controller holds its own strongly), so a process serving many wallets keeps only live ones.
 */
const WALLET_STATES = contextKey("wallet states", () => new SharedRegistry<WalletState>());
export function stateOf(wallet: X402Wallet, context: ServiceContext = defaultServiceContext()): WalletState {
  const states = context.part(WALLET_STATES);
  return states.get(walletScopeKey(walletNamespace(wallet), wallet.address), () => new WalletState(states));
}

/** A pending payment as the store keeps it (for another process to re-send or reconcile). */
export function pendingRecord(p: PendingPayment): PendingPaymentRecord {
  const { id, expiresAt, signed, decision, topUpUrl, signedAt, balanceBeforeUsd } = p;
  const data = JSON.stringify({ signed, decision, topUpUrl, signedAt, balanceBeforeUsd }, (_k, v: unknown) =>
    typeof v === "bigint" ? { bigint: v.toString() } : v,
  );
  return { id, expiresAt, data };
}

export function pendingFromRecord(r: PendingPaymentRecord, topUpUrl: string): PendingPayment {
  const d = JSON.parse(r.data, (_k, v: unknown) =>
    v && typeof v === "object" && typeof (v as { bigint?: unknown }).bigint === "string" && Object.keys(v).length === 1
      ? BigInt((v as { bigint: string }).bigint)
      : v,
  ) as Omit<PendingPayment, "id" | "expiresAt" | "sent">;
  // whether its holder sent it is unknown: as if it had (it is re-sent or reconciled, never dropped)
  // sent (and reconciled) only at this process's own top-up URL: a URL read from the store is not trusted
  return { ...d, topUpUrl, id: r.id, expiresAt: r.expiresAt, sent: true };
}

/** Opens the wallet's gate; the returned function closes it (once) with the outcome for the waiters. */
export function openGate(s: WalletState): (outcome?: Error) => void {
  let resolve!: (outcome: Error | undefined) => void;
  const gate = new Promise<Error | undefined>((r) => (resolve = r));
  s.gate = gate;
  let closed = false;
  return (outcome) => {
    if (closed) return;
    closed = true;
    if (s.gate === gate) s.gate = undefined;
    resolve(outcome);
  };
}

/** What one controller hands the modules that do its work (all of them act for one wallet). */
export interface PaymentContext {
  readonly wallet: X402Wallet;
  readonly policy: PaymentPolicy;
  readonly options: X402PaymentOptions;
  readonly store: PaymentStore;
  /** the wallet's money state in its context (shared by every controller of the wallet there) */
  readonly state: WalletState;
  /** the wallet's key in the store (its budget scope, its lease) */
  readonly walletKey: string;
  /** reports an event; awaited so that callbacks have it before the request that caused it returns */
  emit(
    listener: PaymentEventListener | undefined,
    type: PaymentEvent["type"],
    decision: Partial<PaymentDecision> | undefined,
    extra?: Partial<PaymentEvent>,
  ): Promise<void>;
}
