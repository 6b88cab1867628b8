/**
 * The one fetch stack as the faces and the actions see it (src/stack.ts builds it): the transport, plus the wallet
 * it pays with, its spend budget and its payment controller. A type only, on the floor under the actions, so that
 * they and the assembly above them share it without importing each other.
 */
import type { TransportFetch } from "../http/fetch-stack.js";
import type { SpendBudget } from "../spend/budget.js";
import type { X402PaymentController } from "../x402/layer.js";
import type { X402Wallet } from "../x402/wallets.js";

export interface ServiceFetch extends TransportFetch {
  /** the wallet this stack signs and pays with, if any */
  readonly wallet?: X402Wallet;
  /** the stack's own spend budget (`budget` option), if any */
  readonly budget?: SpendBudget;
  /** the x402 payment controller (money state, caps) of a wallet stack; undefined without a wallet */
  paymentController(): Promise<X402PaymentController | undefined>;
}
