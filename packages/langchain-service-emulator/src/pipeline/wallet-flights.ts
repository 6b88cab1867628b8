/** Requests in flight per wallet, as the live service counts them (on inference and crypto RPC routes). */
import { isLiveMode } from "../types.js";
import type { PipelineState } from "./state.js";

/** The live service's cap of requests in flight per wallet (the 6th gets `429 X402_CONCURRENCY_LIMIT`). */
export const LIVE_WALLET_CONCURRENCY = 5;

export class WalletFlights {
  readonly #count = new Map<string, number>();
  constructor(readonly limit: number) {}
  /** Takes a place for `wallet`; undefined when it already has `limit` in flight, else the release (idempotent). */
  take(wallet: string): (() => void) | undefined {
    const n = this.#count.get(wallet) ?? 0;
    if (n >= this.limit) return undefined;
    this.#count.set(wallet, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#count.get(wallet) ?? 1) - 1;
      if (left <= 0) this.#count.delete(wallet);
      else this.#count.set(wallet, left);
    };
  }
}

const walletFlights = new WeakMap<PipelineState, WalletFlights | null>();

/** The emulator's counter (option `walletConcurrency`; live 5, seed none), or undefined when there is no cap. */
export function walletFlightsOf(state: PipelineState): WalletFlights | undefined {
  let f = walletFlights.get(state);
  if (f === undefined) {
    const option = state.ctx.options.walletConcurrency;
    const limit = option === undefined ? (isLiveMode(state.ctx.options) ? LIVE_WALLET_CONCURRENCY : 0) : option === false ? 0 : option;
    walletFlights.set(state, (f = limit > 0 ? new WalletFlights(limit) : null));
  }
  return f ?? undefined;
}
