/**
 * x402 actions for `ServiceClient` (which delegates to these): an explicit top-up, the wallet's transactions.
 * Both go through the client's own fetch stack, so a wallet-configured client signs them with SIWX.
 */
import { z } from "zod";
import { ConfigurationError, ValidationError } from "../http/errors.js";
import { parseWith, type ServiceApi } from "../api/request.js";
import { stackContext } from "../http/context.js";
import { X402PaymentController, type TopUpResult, type X402PaymentOptions } from "./layer.js";
import type { PaymentEvent } from "./events.js";
import type { PaymentPolicy, PaymentPolicyOptions } from "./policy.js";
import type { X402Wallet } from "./wallets.js";

export interface TopUpOptions {
  /** the controller whose caps and money state apply (the one inside the client's payment layer) */
  controller?: X402PaymentController;
  /** else: the wallet (and policy) to pay with */
  wallet?: X402Wallet;
  policy?: PaymentPolicy | PaymentPolicyOptions;
  onPayment?: (event: PaymentEvent) => void;
  /** other controller options (timeouts, Solana RPC) */
  payment?: Partial<X402PaymentOptions>;
  /**
   * ends the caller's wait: before the payment is signed it cancels the top-up (nothing paid); once signed, the
   * payment is still delivered and its outcome recorded for the next call
   */
  signal?: AbortSignal;
}

function controllerFor(client: ServiceApi, opts: TopUpOptions): X402PaymentController {
  if (opts.controller) return opts.controller;
  if (!opts.wallet) throw new ConfigurationError("topUp needs a wallet (or the client's payment controller)");
  // the wallet state of the client's context: one top-up in flight with its stacks' payments
  return new X402PaymentController({
    ...opts.payment,
    wallet: opts.wallet,
    policy: opts.policy,
    onPayment: opts.onPayment,
    baseUrl: client.baseUrl,
    context: opts.payment?.context ?? stackContext(client.fetch),
  });
}

/**
 * Tops up the wallet's credit by `amountUsd` (at least the service's minimum, $5), within the policy's caps.
 * Waits for an automatic top-up in flight rather than paying alongside it.
 */
export async function topUp(client: ServiceApi, amountUsd: number, opts: TopUpOptions = {}): Promise<TopUpResult> {
  const controller = controllerFor(client, opts);
  return controller.explicitTopUp(client.fetch, client.fetch.url("/x402/top-up"), amountUsd, undefined, opts.signal);
}

const TransactionSchema = z
  .object({
    id: z.string(),
    amount: z.number(),
    balanceAfter: z.number(),
    type: z.string(),
    createdAt: z.string(),
    requestId: z.string().nullable().optional(),
    modelId: z.string().nullable().optional(),
  })
  .passthrough();
export type X402Transaction = z.infer<typeof TransactionSchema>;

const TransactionsSchema = z
  .object({
    success: z.boolean().optional(),
    data: z
      .object({
        walletAddress: z.string(),
        currentBalance: z.number().optional(),
        transactions: z.array(TransactionSchema),
        pagination: z.object({ limit: z.number(), offset: z.number(), hasMore: z.boolean() }).passthrough(),
      })
      .passthrough(),
  })
  .passthrough();
export type X402Transactions = z.infer<typeof TransactionsSchema>["data"];

export interface TransactionsOptions {
  /** the wallet whose history to read (the client must be signed in as it) */
  wallet?: X402Wallet;
  address?: string;
  /** 1..100 (default 50) */
  limit?: number;
  offset?: number;
  signal?: AbortSignal;
}

/** GET /x402/transactions/{wallet}: the wallet's top-ups and charges, newest first. */
export async function getX402Transactions(client: ServiceApi, opts: TransactionsOptions = {}): Promise<X402Transactions> {
  const address = opts.address ?? opts.wallet?.address;
  if (!address || !/^(0x[0-9a-fA-F]{40}|[1-9A-HJ-NP-Za-km-z]{32,44})$/.test(address)) {
    throw new ValidationError(`getX402Transactions: not an EVM or Solana address: ${JSON.stringify(address)}`);
  }
  if (opts.limit !== undefined && !(Number.isInteger(opts.limit) && opts.limit >= 1 && opts.limit <= 100)) {
    throw new ValidationError("getX402Transactions: limit must be an integer from 1 to 100");
  }
  if (opts.offset !== undefined && !(Number.isInteger(opts.offset) && opts.offset >= 0)) {
    throw new ValidationError("getX402Transactions: offset must be a non-negative integer");
  }
  const res = await client.request(`/x402/transactions/${address}`, {
    query: { limit: opts.limit, offset: opts.offset },
    signal: opts.signal,
  });
  return parseWith(TransactionsSchema, res.data, "/x402/transactions", res.headers).data;
}
