/**
 * The wallet's credit as this process last learned it (`BalanceFigure`, kept in the wallet's state), and the shape
 * of `GET /x402/balance/{wallet}`. Apart from balance.ts, which reads it, so that the wallet's state can hold a
 * figure without importing the code that reads one (and the reading code the state it reads for).
 */
import { z } from "zod";

/** the longest a figure is answered without a new read, whatever happened here */
export const BALANCE_MAX_AGE_MS = 60_000;
/** the credit a wallet needs to be served (the live guide's $0.10), when a 402 does not say */
export const MINIMUM_BALANCE_USD = 0.1;

export const X402BalanceSchema = z
  .object({
    success: z.boolean().optional(),
    data: z
      .object({
        walletAddress: z.string(),
        balanceUsd: z.number(),
        canConsume: z.boolean().optional(),
        minimumTopUpUsd: z.number().optional(),
        suggestedTopUpUsd: z.number().optional(),
        diemBalanceUsd: z.number().optional(),
      })
      .passthrough(),
  })
  .passthrough();
export type X402Balance = z.infer<typeof X402BalanceSchema>["data"];

/** The wallet's credit as this process last learned it. */
export class BalanceFigure {
  /** USD credit of the wallet */
  usd?: number;
  /** the linked account's staking-token credit in USD, when the last read showed one */
  diemUsd?: number;
  /** when it was learned (ms since epoch) */
  at = 0;
  /** a credit-bearing request of the wallet was served after it was learned */
  moved = false;
  /** the read in flight (single flight) */
  reading?: Promise<X402Balance | undefined>;

  learn(usd: number, now = Date.now(), diemUsd?: number): void {
    this.usd = usd;
    this.diemUsd = diemUsd;
    this.at = now;
    this.moved = false;
  }

  /** The credit moved by an amount not told (a charge without the header, a 402, a top-up without `newBalance`). */
  markStale(): void {
    this.moved = true;
  }

  /** Whether the figure may be answered without a new read (see the file's comment). */
  fresh(now = Date.now()): boolean {
    return this.usd !== undefined && !this.moved && now - this.at < BALANCE_MAX_AGE_MS;
  }
}
