/**
 * The emulator's `POST /x402/top-up`: without a payment header, the requirements (402); with one, the payment is
 * verified against what was offered and settled for real on its rail (EVM on the local chain through `@x402/evm`'s
 * facilitator, Solana on LiteSVM), then credited once.
 *
 * `PAYMENT-SIGNATURE` takes x402 v2 payloads whose `accepted` is exactly one offered requirement (the $5 minimum);
 * `X-402-Payment` / `X-PAYMENT` also take v1 payloads (as the service's own wallet SDK sends them) of any amount from
 * $5 to $10,000. A signed payment is credited at most once however often it is sent: a re-send while it is still
 * settling is `409 PAYMENT_IN_PROGRESS` (live; the seed waits for the settlement), and so is a re-send after it
 * settled (live: "already processed"; the seed answers 400 `PAYMENT_VERIFICATION_FAILED`, its nonce used).
 *
 * Answers on demand (see X402EmulatorOptions): `504 SETTLEMENT_TIMEOUT` (it settles anyway, later, or not),
 * `402 SETTLEMENT_FAILED` (no funds moved), `503 X402_NOT_CONFIGURED`, a slow facilitator, a late or lost answer, a wrong offer.
 */
import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { getAddress } from "ethers";
import { BASE_MAINNET, SOLANA_MAINNET } from "langchain-service";
import { EmulatorHttpError, type EmulatorContext, type EmulatorRequest, type EmulatorResponse } from "../types.js";
import type { Rail, X402Behaviour, X402EmulatorOptions } from "./options.js";
import type { RouteLimits } from "./route-limits.js";
import { usdToAtomic } from "./encoding.js";

export const DECIMALS = 6;
/** Why an emulator with no rail offers nothing to pay: said in each answer that would otherwise offer a rail. */
export const NO_PAYMENT_RAIL_MESSAGE =
  "No payment rail is available in this emulator: the local chain (Base) is off and the Solana rail (litesvm) is off or not installed. " +
  "Start it with the chain (`chain: true`; the CLI without --no-chain) to top up a wallet; API keys work.";

export function base64Json(value: unknown): string {
  return Buffer.from(JSON.stringify(value), "utf8").toString("base64");
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function normalizeNetwork(network: unknown): string | undefined {
  if (typeof network !== "string") return undefined;
  if (network === "base" || network === "base-mainnet") return BASE_MAINNET;
  if (network === "solana" || network === "solana-mainnet") return SOLANA_MAINNET;
  return network;
}

/** A top-up refusal: the code in `error` (as on the live top-up route), the reason in `message`. */
function paymentError(status: number, error: string, message: string, details?: Record<string, unknown>): never {
  throw new EmulatorHttpError(status, { error, message, ...(details ? { details } : {}) });
}

interface Settled {
  walletAddress: string;
  amountCredited: number;
  newBalance: number;
  paymentId: string;
  receipt: { success: true; network: string; payer: string; transaction: string };
}

/** A payment that passed every check: what to settle, on which rail, for how much. */
interface Verified {
  rail: Rail;
  network: string;
  payload: Record<string, unknown>;
  requirement: Record<string, unknown>;
  amount: bigint;
  usd: number;
}

export interface TopUpDeps {
  ctx: EmulatorContext;
  o: X402EmulatorOptions;
  behaviour: X402Behaviour;
  limits: RouteLimits;
  rails: Map<string, Rail>;
  /** the offered requirements (one per rail, at the minimum top-up) */
  accepts(): Record<string, unknown>[];
  resourceOf(req: EmulatorRequest): { url: string; description: string; mimeType: string };
  minimumTopUpUsd: number;
  maximumTopUpUsd: number;
}

/** The top-up route's handler. */
export function createTopUp(deps: TopUpDeps): (req: EmulatorRequest) => Promise<EmulatorResponse> {
  const { ctx, o, behaviour: b, rails } = deps;
  let delayed = 0;
  let slowed = 0;
  let failed = 0;
  let timedOut = 0;
  let settleFailed = 0;
  let wrongOffered = 0;
  let countsEpoch = o.countsEpoch;
  /** the counted answers start again when `countsEpoch` changes (see X402EmulatorOptions) */
  const countsFromEpoch = () => {
    if (o.countsEpoch === countsEpoch) return;
    countsEpoch = o.countsEpoch;
    delayed = slowed = failed = timedOut = settleFailed = wrongOffered = 0;
  };
  /** the offer to answer a read of the requirements with: the service's own, or a wrong one on demand */
  const offered = (): Record<string, unknown>[] => {
    const accepts = deps.accepts();
    const w = o.wrongOffer;
    if (!w || wrongOffered >= w.first) return accepts;
    wrongOffered++;
    return accepts.map((a) => ({
      ...a,
      ...(w.payTo !== undefined ? { payTo: w.payTo } : {}),
      ...(w.asset !== undefined ? { asset: w.asset } : {}),
      ...(w.amountUsd !== undefined ? { amount: String(usdToAtomic(w.amountUsd, DECIMALS)) } : {}),
    }));
  };
  /** settlements by payload fingerprint, in flight or done: an identical re-send gets the same answer */
  const settlements = new Map<string, { settling: boolean; done: Promise<Settled> }>();

  function verify(viaSignatureHeader: boolean, raw: Record<string, unknown>): Verified {
    const version = raw.x402Version;
    if (version !== 1 && version !== 2) paymentError(400, b.code("INVALID_PAYMENT_FORMAT"), "Unsupported x402Version");
    // The v2 shape names the requirement it accepts; the v1 shape carries scheme and network at its top. The
    // service's own SDK sends the v1 shape through the legacy `x402` package, labelled with the 402's version (2),
    // so in the legacy headers the shape decides, not the label.
    const v2Shape = raw.accepted !== undefined;
    const accepted = (v2Shape ? raw.accepted : undefined) as Record<string, unknown> | undefined;
    // PAYMENT-SIGNATURE is the v2 header; v1 payloads come in X-402-Payment / X-PAYMENT
    if (viaSignatureHeader && !(version === 2 && v2Shape)) {
      paymentError(
        400,
        b.code("INVALID_PAYMENT_FORMAT"),
        "PAYMENT-SIGNATURE carries x402 v2 payloads (with `accepted`); send v1 payloads in X-402-Payment",
      );
    }
    if (v2Shape) {
      // the x402 reference rule: `accepted` is one of the offered requirements, exactly (amount, payee, validity...)
      if (!accepted || typeof accepted !== "object")
        paymentError(400, b.code("INVALID_PAYMENT_FORMAT"), "`accepted` is not a payment requirement");
      if (!deps.accepts().some((offer) => isDeepStrictEqual(offer, accepted))) {
        paymentError(
          400,
          "PAYMENT_VERIFICATION_FAILED",
          "Payment verification failed: `accepted` does not match any offered payment requirement",
          {
            reason: "accepted_requirement_mismatch",
          },
        );
      }
    }
    const network = normalizeNetwork(accepted?.network ?? raw.network);
    const scheme = accepted?.scheme ?? raw.scheme;
    if (scheme !== "exact") paymentError(400, b.code("UNSUPPORTED_SCHEME"), "Only the exact scheme is accepted");
    const rail = network ? rails.get(network) : undefined;
    if (!rail)
      paymentError(400, b.code("UNSUPPORTED_NETWORK"), `Network ${String(network)} is not accepted here`, {
        reason: "unsupported_network",
        accepted: [...rails.keys()],
      });
    if (!raw.payload || typeof raw.payload !== "object") paymentError(400, b.code("INVALID_PAYMENT"), "Payment payload missing");
    const amount = rail.amountOf(raw, accepted);
    if (amount === undefined) paymentError(400, b.code("INVALID_AMOUNT"), "Payment amount unreadable");
    if (accepted?.amount !== undefined && String(accepted.amount) !== amount.toString()) {
      paymentError(400, b.code("INVALID_AMOUNT"), "accepted.amount differs from the signed amount");
    }
    const usd = Number(amount) / 10 ** DECIMALS;
    if (usd < deps.minimumTopUpUsd || usd > deps.maximumTopUpUsd) {
      paymentError(
        400,
        b.code(usd < deps.minimumTopUpUsd ? "AMOUNT_TOO_LOW" : "AMOUNT_TOO_HIGH"),
        `Top-ups must be between $${deps.minimumTopUpUsd} and $${deps.maximumTopUpUsd}`,
        {
          reason: "amount_out_of_range",
          amountUsd: usd,
        },
      );
    }
    const requirement = rail.requirement(amount);
    if (accepted) {
      const sameAddr = (x: unknown, y: unknown) =>
        typeof x === "string" && typeof y === "string" && (network!.startsWith("eip155:") ? x.toLowerCase() === y.toLowerCase() : x === y);
      if (!sameAddr(accepted.asset, requirement.asset))
        paymentError(400, b.code("UNSUPPORTED_TOKEN"), "The payment is not in the accepted asset", { reason: "wrong_asset" });
      if (!sameAddr(accepted.payTo, requirement.payTo))
        paymentError(400, b.code("INVALID_PAYMENT_RECIPIENT"), "The payment is not to the service's wallet", { reason: "wrong_payee" });
    }
    // the facilitator verifies against our requirement, never against what the client claims
    const payload = { x402Version: 2, accepted: requirement, payload: raw.payload, resource: raw.resource };
    return { rail, network: network!, payload, requirement, amount, usd };
  }

  async function settle(v: Verified): Promise<Settled> {
    let result: Awaited<ReturnType<Rail["settle"]>>;
    try {
      result = await v.rail.settle(v.payload, v.requirement);
    } catch (err) {
      paymentError(500, "X402_INVALID_PAYMENT", "Settlement failed unexpectedly", {
        reason: String((err as Error)?.message ?? err).slice(0, 300),
      });
    }
    if (!result.success || !result.payer) {
      paymentError(400, "PAYMENT_VERIFICATION_FAILED", "Payment verification or settlement failed", {
        reason: result.errorReason ?? "unknown",
      });
    }
    const payer = v.network.startsWith("eip155:") ? getAddress(result.payer) : result.payer;
    const account = ctx.ledger.wallet(payer, ctx.options.walletStartingUsd ?? 0);
    const entry = ctx.ledger.topUp(account, v.usd, {
      transaction: result.transaction,
      network: v.network,
      paidAtomic: v.amount.toString(),
    });
    return {
      walletAddress: account.id,
      amountCredited: v.usd,
      newBalance: account.usd,
      paymentId: `payment_${entry.id}`,
      receipt: { success: true, network: v.network, payer, transaction: result.transaction },
    };
  }

  /** Starts a verified payment's settlement (late, for a slow facilitator), remembered under its fingerprint. */
  function startSettlement(fingerprint: string, v: Verified): { settling: boolean; done: Promise<Settled> } {
    const slow = o.settleDelayMs !== undefined && slowed < (o.delayedSettlements ?? 1);
    if (slow) slowed++;
    const entry = { settling: true, done: (slow ? sleep(o.settleDelayMs!) : Promise.resolve()).then(() => settle(v)) };
    settlements.set(fingerprint, entry);
    entry.done.then(
      () => (entry.settling = false),
      // a refused payment may be corrected and re-signed; only settled ones are remembered
      () => settlements.delete(fingerprint),
    );
    return entry;
  }

  return async function topUp(req: EmulatorRequest): Promise<EmulatorResponse> {
    const limited = deps.limits.admit("topUp", req);
    if (limited) return limited;
    countsFromEpoch();
    if (o.notConfigured)
      return { status: 503, body: { error: "X402_NOT_CONFIGURED", message: "x402 payments are temporarily unavailable" } };
    const header = req.headers["payment-signature"] ?? req.headers["x-402-payment"] ?? req.headers["x-payment"];
    if (!header) {
      // No rail: the published shape still (its body admits no other field), offering nothing; the reason goes
      // in the x402 object's own `error`. Clients fail on an empty `accepts` at once, and a 402 is never retried.
      const error = rails.size > 0 ? "Payment required" : NO_PAYMENT_RAIL_MESSAGE;
      const paymentRequired = { x402Version: 2, error, resource: deps.resourceOf(req), accepts: offered() };
      return {
        status: 402,
        headers: { "PAYMENT-REQUIRED": base64Json(paymentRequired) },
        body: { x402Version: 2, accepts: paymentRequired.accepts },
      };
    }
    // a payment no rail could settle (an emulator-only state): the published 400, saying why (never a 5xx a client
    // would retry)
    if (rails.size === 0) paymentError(400, "X402_INVALID_PAYMENT", NO_PAYMENT_RAIL_MESSAGE, { reason: "no_payment_rail" });
    let raw: Record<string, unknown>;
    try {
      raw = JSON.parse(Buffer.from(header.trim(), "base64").toString("utf8")) as Record<string, unknown>;
      if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw new Error("not an object");
    } catch {
      paymentError(400, b.code("INVALID_PAYMENT_FORMAT"), "Invalid payment header: not base64 JSON");
    }
    const fingerprint = createHash("sha256")
      .update(JSON.stringify(raw.payload ?? null))
      .digest("hex");
    const earlier = settlements.get(fingerprint);
    if (earlier) {
      // A re-send of a payment seen before. Still settling: live, 409 at once; seed, it waits and shares the
      // outcome. Settled: its nonce is spent, and like the chain the service says so, never a second 200.
      if (earlier.settling && b.resend409) {
        return { status: 409, body: { error: "PAYMENT_IN_PROGRESS", message: "This payment is still settling; retry shortly" } };
      }
      await earlier.done;
      // live: "already processed" is a 409 too, so a client cannot tell it from settling by the status alone
      if (b.settled409) return { status: 409, body: { error: "PAYMENT_IN_PROGRESS", message: "This payment was already processed" } };
      paymentError(400, "PAYMENT_VERIFICATION_FAILED", "Payment verification failed: the authorization's nonce was already used", {
        reason: "nonce_already_used",
      });
    }
    const verified = verify(req.headers["payment-signature"] !== undefined, raw);
    if (o.settlementFailures && settleFailed < o.settlementFailures) {
      settleFailed++;
      return { status: 402, body: { error: "SETTLEMENT_FAILED", message: "Payment settlement failed; no funds were transferred" } };
    }
    if (o.settlementTimeouts && timedOut < o.settlementTimeouts) {
      timedOut++;
      // the facilitator gave up waiting: the payment lands later (re-sends meanwhile: in progress), or never
      if (o.settlementTimeoutLands !== false) startSettlement(fingerprint, verified).done.catch(() => undefined);
      return {
        status: 504,
        body: {
          error: "SETTLEMENT_TIMEOUT",
          message: "Settlement timed out; the payment may still settle. Check the balance before signing a new payment",
        },
      };
    }
    const done = await startSettlement(fingerprint, verified).done;
    if (o.topUpFailures && failed < o.topUpFailures) {
      failed++;
      return { status: 503, body: { error: "Service temporarily unavailable" } };
    }
    if (o.topUpResponseDelayMs && delayed < (o.delayedTopUps ?? 1)) {
      delayed++;
      await sleep(o.topUpResponseDelayMs);
    }
    const { receipt, ...data } = done;
    return { status: 200, headers: { "PAYMENT-RESPONSE": base64Json(receipt) }, body: { success: true, data } };
  };
}
