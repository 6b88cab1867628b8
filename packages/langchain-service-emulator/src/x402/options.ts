/**
 * The emulator's x402 options (`startEmulator({ x402: {...} })`), and how each behaviour that differs between the
 * live service and the seed contract is decided: its own option when set, else the emulator's `mode` (live by
 * default). Options are read on each request, so a test may change them on a running emulator.
 */
import { isLiveMode, type EmulatorContext, type Route } from "../types.js";
import { SIWX_FUTURE_SKEW_MS, SIWX_LIVE_FUTURE_SKEW_MS, type SiwxRules } from "./siwx.js";

export interface X402EmulatorOptions {
  /** minimum wallet credit to be served (default 0.10) */
  minimumBalanceUsd?: number;
  suggestedTopUpUsd?: number;
  minimumTopUpUsd?: number;
  maximumTopUpUsd?: number;
  /** true: start a LiteSVM rail when `litesvm` is installed; false: Base only */
  solana?: boolean;
  /** answer the first `delayedTopUps` (1) top-ups this many ms late, after settling (a client timeout after the money moved) */
  topUpResponseDelayMs?: number;
  delayedTopUps?: number;
  /** answer the first N top-ups 503 after settling */
  topUpFailures?: number;
  /** settle the first `delayedSettlements` (1) payments this many ms after they arrive (a slow facilitator) */
  settleDelayMs?: number;
  delayedSettlements?: number;
  /** tests only: replaces `import("litesvm")` (to exercise the missing-package path) */
  solanaImporter?: () => Promise<unknown>;

  // --- where the live service and the seed differ (each option wins over the mode) ---
  /** send `X-Balance-Remaining` on a wallet's served answers (live: never, the guide documents it but it is not sent; seed: yes) */
  balanceHeader?: boolean;
  /**
   * a re-send of a payment that is still settling: `"409"` answers `409 PAYMENT_IN_PROGRESS` at once (live);
   * `"wait"` waits for the settlement and answers as a re-send after it (seed)
   */
  resendWhileSettling?: "409" | "wait";
  /**
   * a re-send of a payment already credited: `"409"` answers `409 PAYMENT_IN_PROGRESS` ("already processed", live:
   * the same code as while settling); `"400"` answers `400 PAYMENT_VERIFICATION_FAILED`, its nonce used (seed)
   */
  resendAfterSettled?: "409" | "400";
  /**
   * the top-up's 400 codes (in `error`): `"live"` (`INVALID_PAYMENT_FORMAT`, `UNSUPPORTED_NETWORK`,
   * `UNSUPPORTED_TOKEN`, `INVALID_PAYMENT_RECIPIENT`, `AMOUNT_TOO_LOW`, …) or `"seed"` (`X402_INVALID_PAYMENT`)
   */
  refusalCodes?: "live" | "seed";
  /**
   * the x402 routes' own limits, a rolling `windowMs` (default 60000): top-up per IP, balance and transactions per
   * wallet; over them `429 {error: "Rate limit exceeded. Please try again later."}` with no rate-limit headers
   * (live: 10, 30, 20; seed and `false`: none)
   */
  routeLimits?: false | { topUp?: number; balance?: number; transactions?: number; windowMs?: number };
  /**
   * `/x402/balance` and `/x402/transactions` without a sign-in: `"live"` answers 402 (the discovery shape, empty
   * `accepts`) and a bad sign-in 401 `{error: "Invalid Sign-in-with-x signature"}`; `"seed"` answers 401 to both
   */
  readRouteAuth?: "live" | "seed";
  /**
   * the `PAYMENT-REQUIRED` header of an inference 402 (a wallet short of credit): `"live"` prices its `accepts` at
   * the suggested top-up ($10) and names Solana as bare `solana`, unlike `POST /x402/top-up` (the $5 minimum,
   * CAIP-2 networks: the one to sign against); `"seed"` repeats the top-up's offer
   */
  challengeOffer?: "live" | "seed";
  /**
   * the code of a refused sign-in (401) on inference routes: `"live"` names the check that failed
   * (`X402_SIGN_IN_EXPIRED`, `_NONCE_REUSED`, `_INVALID_SIGNATURE`, `_DOMAIN_MISMATCH`, …); `"seed"` answers
   * `X402_INVALID_SIGN_IN` to them all
   */
  signInCodes?: "live" | "seed";
  /**
   * how a sign-in's domain and times are checked: `"live"` compares its domain, stripped of protocol, port and path,
   * with `signInDomains` (never the request's `Host`; `uri` unchecked) and allows `issuedAt` 30 s ahead; `"seed"`
   * wants the public origin's host with port as domain and a uri on it, and 5 s ahead
   */
  signInCheck?: "live" | "seed";
  /**
   * the service's own hosts a live sign-in's domain must name (default: the public origin's host, `api.<brand>.ai`
   * and `<brand>.ai`, as a real deployment lists them)
   */
  signInDomains?: string[];
  /**
   * a request with both `Authorization: Bearer` and a sign-in, on a route that takes a wallet: `"wallet"` signs in
   * the wallet and bills it, the key unread (live); `"key"` uses the key (seed). Bearer-only routes always use the key.
   */
  bothCredentials?: "wallet" | "key";

  // --- top-up answers on demand (both modes; each counts the signed payments it applies to) ---
  /** answer the first N signed payments `504 SETTLEMENT_TIMEOUT`; they settle anyway, later (`settlementTimeoutLands`, default true) or not */
  settlementTimeouts?: number;
  /** whether a payment answered 504 still settles (after `settleDelayMs`, else at once); false: never, its bytes may be sent again */
  settlementTimeoutLands?: boolean;
  /** answer the first N signed payments `402 SETTLEMENT_FAILED`: nothing settled, no funds moved */
  settlementFailures?: number;
  /** payments are off: every `POST /x402/top-up` is `503 X402_NOT_CONFIGURED` */
  notConfigured?: boolean;
  /**
   * a wrong offer: the first `first` reads of the requirements (`POST /x402/top-up` without a payment) offer
   * something other than the service's own terms (`payTo` another payee, `asset` another token, `amountUsd` another
   * amount), as a compromised or misconfigured deployment would. A payment signed for it is refused as not offered
   * (`400 PAYMENT_VERIFICATION_FAILED`, nothing settles): what is at stake is the signature a client gave away
   */
  wrongOffer?: { first: number; payTo?: string; asset?: string; amountUsd?: number };
  /**
   * the counted answers above (`topUpFailures`, `delayedTopUps`, `delayedSettlements`, `settlementTimeouts`,
   * `settlementFailures`, `wrongOffer.first`) count from the emulator's start, or from the last change of this value:
   * a test that sets them anew on a running emulator changes it instead of adding the counts used so far
   */
  countsEpoch?: number;

  /**
   * EVM wallets linked to an account with staking-token (DIEM) credit this epoch, address -> USD of DIEM left. Such
   * a wallet is billed to that account first (its charges are not in the wallet's transactions), its balance shows
   * `diemBalanceUsd`, and while DIEM is left but under the minimum it is refused 402 whatever its own credit: a
   * top-up does not cure that. Also `emulator.ledger.linkWallet(address, { diemUsd })` at run time.
   */
  linkedWallets?: Record<string, number>;
}

export interface RouteLimitSettings {
  topUp: number;
  balance: number;
  transactions: number;
  windowMs: number;
}

/** The live service's per-route limits (a minute). */
export const LIVE_ROUTE_LIMITS: RouteLimitSettings = { topUp: 10, balance: 30, transactions: 20, windowMs: 60_000 };

/** The behaviours that differ between live and seed, decided (option, else mode) on each call. */
export class X402Behaviour {
  constructor(
    readonly o: X402EmulatorOptions,
    readonly ctx: EmulatorContext,
  ) {}

  get live(): boolean {
    return isLiveMode(this.ctx.options);
  }
  get balanceHeader(): boolean {
    return this.o.balanceHeader ?? !this.live;
  }
  get resend409(): boolean {
    return (this.o.resendWhileSettling ?? (this.live ? "409" : "wait")) === "409";
  }
  get settled409(): boolean {
    return (this.o.resendAfterSettled ?? (this.live ? "409" : "400")) === "409";
  }
  get liveCodes(): boolean {
    return (this.o.refusalCodes ?? (this.live ? "live" : "seed")) === "live";
  }
  /** the codes of a refused sign-in: the live service's specific ones, or the seed's single one */
  get signInCodes(): "live" | "seed" {
    return this.o.signInCodes ?? (this.live ? "live" : "seed");
  }
  /** how sign-ins are checked (see `signInCheck`) */
  get signInRules(): SiwxRules {
    const codes = this.signInCodes;
    if ((this.o.signInCheck ?? (this.live ? "live" : "seed")) === "seed") return { codes, futureSkewMs: SIWX_FUTURE_SKEW_MS };
    const brand = this.ctx.names.brand;
    const domains = this.o.signInDomains ?? [new URL(this.ctx.publicOrigin).host, `api.${brand}.ai`, `${brand}.ai`];
    return { codes, domains, futureSkewMs: SIWX_LIVE_FUTURE_SKEW_MS };
  }
  get liveReadAuth(): boolean {
    return (this.o.readRouteAuth ?? (this.live ? "live" : "seed")) === "live";
  }
  get liveChallengeOffer(): boolean {
    return (this.o.challengeOffer ?? (this.live ? "live" : "seed")) === "live";
  }
  /** the route limits in force, or undefined for none */
  get routeLimits(): RouteLimitSettings | undefined {
    const r = this.o.routeLimits;
    if (r === false || (r === undefined && !this.live)) return undefined;
    return { ...LIVE_ROUTE_LIMITS, ...r };
  }
  /** a top-up refusal's code: the live one, or the seed's catch-all */
  code(live: string): string {
    return this.liveCodes ? live : "X402_INVALID_PAYMENT";
  }
}

/** A payment rail the emulator can settle on. */
export interface Rail {
  network: string;
  requirement(amountAtomic: bigint): Record<string, unknown>;
  /** the atomic amount a payload transfers, read from the payload itself (undefined when unreadable) */
  amountOf(payload: Record<string, unknown>, accepted: Record<string, unknown> | undefined): bigint | undefined;
  settle(
    payload: Record<string, unknown>,
    requirement: Record<string, unknown>,
  ): Promise<{ success: boolean; transaction: string; payer?: string; errorReason?: string }>;
  /** extra routes (e.g. the Solana JSON-RPC) */
  routes?: Route[];
  close?(): Promise<void>;
}
