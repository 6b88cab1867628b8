/**
 * The shapes the x402 payment modules share: the controller's options and results (public, re-exported by
 * layer.ts), a signed payment kept until its outcome is known, and the context the request path, the top-up
 * single flight, settlement and balance reads are handed (one per controller).
 */
import type { PaymentEvent } from "./events.js";
import type { PaymentDecision, PaymentPolicy, PaymentPolicyOptions } from "./policy.js";
import type { SignedPayment } from "./payment.js";
import type { X402Wallet } from "./wallets.js";
import type { PaymentStore } from "../store/types.js";
import type { ServiceContext } from "../http/context.js";

export interface X402PaymentOptions {
  wallet: X402Wallet;
  /** the owner's rules (share one PaymentPolicy instance to share its caps between clients) */
  policy?: PaymentPolicy | PaymentPolicyOptions;
  onPayment?: (event: PaymentEvent) => void;
  /** deployment brand (for symmetry with the stack; x402 wire names carry no brand) */
  brand?: string;
  /** base URL including /api/v1; default: derived from each request URL */
  baseUrl?: string;
  /**
   * the domain sign-ins name (`withX402`): the service's own host when it is reached through a proxy or another
   * host name (default: the request URL's host)
   */
  signInDomain?: string;
  /** Solana RPC for building Solana payments: the mint and a blockhash (default: @x402/svm's public mainnet RPC;
   *  against the emulator: `${emulator.url}/x402/solana/rpc`) */
  solanaRpcUrl?: string;
  /** per-attempt timeout of a top-up POST in ms (default 60000); also bounds waiting out the top-up routes' 429s */
  topUpTimeoutMs?: number;
  /** re-sends of the same signed payment after a timeout or 5xx (default 3); `409 PAYMENT_IN_PROGRESS` is not counted */
  maxResends?: number;
  /** pause before a re-send in ms (default 500); the first pause after `409 PAYMENT_IN_PROGRESS`, which then grows */
  resendDelayMs?: number;
  /** report events to LangChain callbacks when inside a run (default true) */
  langchainEvents?: boolean;
  /**
   * the context whose wallet states this controller shares (one per wallet address: its top-up in flight, its
   * pending payment, its credit gate); default: the process's
   */
  context?: ServiceContext;
  /** where budgets, payee pins and the top-up lease live (default: this process's `MemoryStore`, shared by every stack) */
  store?: PaymentStore;
  /**
   * how long the wallet's top-up lease lasts without renewal, in ms (default 15000; renewed every third of it
   * while a top-up runs): the longest a process killed while paying holds up the others
   */
  topUpLeaseMs?: number;
}

export interface TopUpResult {
  /** USD signed and paid (what left the wallet) */
  amountUsd: number;
  /** USD the service says it credited, when it said (a warning event is emitted when it differs) */
  creditedUsd?: number;
  /** the outcome was established from the wallet's transactions, not from the top-up answer */
  reconciled?: boolean;
  /** the wallet's credit after the top-up, when reported */
  newBalanceUsd?: number;
  transaction?: string;
  network: string;
  payer?: string;
  paymentId?: string;
  /** re-sends of the same signature it took */
  resends: number;
}

/** What a 402 offers. */
export interface PaymentSource {
  accepts?: unknown[];
  resource?: { url: string; description?: string; mimeType?: string };
  extensions?: Record<string, unknown>;
}

/** A signed payment whose outcome is not known yet: re-sent (the same bytes) or reconciled, never re-signed. */
export interface PendingPayment {
  /** unique per signed payment (its record in the store) */
  id: string;
  signed: SignedPayment;
  decision: PaymentDecision;
  topUpUrl: string;
  /** ms after which it can no longer settle */
  expiresAt: number;
  /** ms when it was signed */
  signedAt: number;
  /** these bytes went out at least once (an answer may have been lost) */
  sent?: boolean;
  /** the wallet's credit before this payment, when known: a balance at or above it plus the amount shows it credited */
  balanceBeforeUsd?: number;
}
