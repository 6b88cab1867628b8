/**
 * The emulator's wallet sign-in and payments (x402): SIWX verified for real, the discovery and
 * insufficient-credit 402s, `/x402/top-up` settling for real (EVM on the local chain through `@x402/evm`'s
 * facilitator, Solana on LiteSVM), `/x402/balance/:wallet` and `/x402/transactions/:wallet`.
 *
 * Payments: `PAYMENT-SIGNATURE` takes x402 v2 payloads whose `accepted` is exactly one offered requirement (the $5
 * minimum); `X-402-Payment` / `X-PAYMENT` also take v1 payloads (as the service's own wallet SDK sends them) of any
 * amount from $5 to $10,000. A re-sent payment is a 400 `PAYMENT_VERIFICATION_FAILED`: its nonce was already used.
 *
 * Options (`startEmulator({ x402: {...} })`):
 *   minimumBalanceUsd (0.10), suggestedTopUpUsd (10), minimumTopUpUsd (5), maximumTopUpUsd (10000),
 *   solana (true: start a LiteSVM rail when `litesvm` is installed; false: Base only),
 *   topUpResponseDelayMs + delayedTopUps: answer the first N top-ups late, after settling (a client timeout
 *   after the money moved), topUpFailures: answer the first N top-ups 503 after settling, settleDelayMs +
 *   delayedSettlements: settle the first N payments late (a slow facilitator; a re-send meanwhile waits for it).
 */
import { createHash, randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { getAddress } from "ethers";
import { SIWX_LEGACY_HEADER, SIWX_HEADER } from "../../x402/siwx.js";
import { SOLANA_MAINNET } from "../../x402/wallets.js";
import { usdToAtomic } from "../../x402/encoding.js";
import {
  EmulatorHttpError,
  type Account,
  type Caller,
  type EmulatorContext,
  type EmulatorRequest,
  type EmulatorResponse,
  type Route,
  type X402Hooks,
} from "../types.js";
import { createEvmRail, type EvmRail } from "./evm.js";
import { NonceStore, verifySiwxHeader } from "./siwx.js";
import type { SolanaRail } from "./solana.js";

export interface X402EmulatorOptions {
  minimumBalanceUsd?: number;
  suggestedTopUpUsd?: number;
  minimumTopUpUsd?: number;
  maximumTopUpUsd?: number;
  solana?: boolean;
  topUpResponseDelayMs?: number;
  delayedTopUps?: number;
  topUpFailures?: number;
  /** settle the first `delayedSettlements` (1) payments this many ms after they arrive (a slow facilitator) */
  settleDelayMs?: number;
  delayedSettlements?: number;
  /** tests only: replaces `import("litesvm")` (to exercise the missing-package path) */
  solanaImporter?: () => Promise<unknown>;
}

const warned = new Set<string>();
/** The missing-litesvm notice, once per process and wording (every emulator start would repeat it). */
function warnOnce(message: string): void {
  if (warned.has(message)) return;
  warned.add(message);
  console.warn(message);
}

/** A payment rail the emulator can settle on. */
export interface Rail {
  network: string;
  requirement(amountAtomic: bigint): Record<string, unknown>;
  /** the atomic amount a payload transfers, read from the payload itself (undefined when unreadable) */
  amountOf(payload: Record<string, unknown>, accepted: Record<string, unknown> | undefined): bigint | undefined;
  settle(payload: Record<string, unknown>, requirement: Record<string, unknown>): Promise<{ success: boolean; transaction: string; payer?: string; errorReason?: string }>;
  /** extra routes (e.g. the Solana JSON-RPC) */
  routes?: Route[];
  close?(): Promise<void>;
}

const DECIMALS = 6;
const SIWX_STATEMENT = "Sign in with your wallet to use the API";
/** Why an emulator with no rail offers nothing to pay: said in each answer that would otherwise offer a rail. */
export const NO_PAYMENT_RAIL_MESSAGE =
  "No payment rail is available in this emulator: the local chain (Base) is off and the Solana rail (litesvm) is off or not installed. " +
  "Start it with the chain (`chain: true`; the CLI without --no-chain) to top up a wallet; API keys work.";

function evmRail(rail: EvmRail): Rail {
  return {
    network: rail.network,
    requirement: rail.requirement,
    amountOf(payload) {
      const value = (payload.payload as { authorization?: { value?: unknown } } | undefined)?.authorization?.value;
      return typeof value === "string" && /^[0-9]{1,40}$/.test(value) ? BigInt(value) : undefined;
    },
    settle: rail.settle,
  };
}

function normalizeNetwork(network: unknown): string | undefined {
  if (typeof network !== "string") return undefined;
  if (network === "base" || network === "base-mainnet") return "eip155:8453";
  if (network === "solana" || network === "solana-mainnet") return SOLANA_MAINNET;
  return network;
}

function base64Json(value: unknown): string {
  return Buffer.from(JSON.stringify(value), "utf8").toString("base64");
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

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

export async function createX402Hooks(ctx: EmulatorContext): Promise<X402Hooks & { solana?: SolanaRail }> {
  const o = (ctx.options.x402 ?? {}) as X402EmulatorOptions;
  const minimumBalance = () => o.minimumBalanceUsd ?? 0.1;
  const suggestedTopUpUsd = o.suggestedTopUpUsd ?? 10;
  const minimumTopUpUsd = o.minimumTopUpUsd ?? 5;
  const maximumTopUpUsd = o.maximumTopUpUsd ?? 10_000;
  const nonces = new NonceStore();
  const rails = new Map<string, Rail>();
  if (ctx.chain) {
    const evm = evmRail(await createEvmRail(ctx.chain));
    rails.set(evm.network, evm);
  }
  let solana: SolanaRail | undefined;
  if (o.solana !== false) {
    const { createSolanaRail, SolanaRailUnavailableError, LITESVM_MISSING_NO_RAIL_MESSAGE } = await import("./solana.js");
    try {
      solana = await createSolanaRail(ctx, o.solanaImporter ? { importer: o.solanaImporter } : {});
      rails.set(solana.network, solana);
    } catch (err) {
      // litesvm is optional: without it the emulator offers what is left, and says so once, in one line
      // (that Base is unaffected only when the chain runs: else no rail is left)
      if (!(err instanceof SolanaRailUnavailableError)) throw err;
      warnOnce(rails.size > 0 ? err.message : LITESVM_MISSING_NO_RAIL_MESSAGE);
    }
  }
  let delayed = 0;
  let slowed = 0;
  let failed = 0;
  /** in-flight and finished settlements by payload fingerprint: an identical re-send gets the same answer */
  const settlements = new Map<string, Promise<Settled>>();

  const accepts = () => [...rails.values()].map((r) => r.requirement(usdToAtomic(minimumTopUpUsd, DECIMALS)));

  // the challenge names the public origin (option `publicOrigin`), the one sign-ins are checked against
  const siwxInfo = (_req: EmulatorRequest) => {
    const now = ctx.now();
    const origin = new URL(ctx.publicOrigin);
    return {
      domain: origin.host,
      uri: origin.origin,
      version: "1",
      nonce: randomUUID().replace(/-/g, "").slice(0, 16),
      issuedAt: new Date(now).toISOString(),
      expirationTime: new Date(now + 5 * 60_000).toISOString(),
      statement: SIWX_STATEMENT,
    };
  };
  const supportedChains = [
    { chainId: "eip155:8453", type: "eip191" },
    { chainId: SOLANA_MAINNET, type: "ed25519" },
  ];
  const authOptions = () => {
    const docs = `https://docs.${ctx.names.brand}.example/api-reference`;
    return {
      apiKey: { header: "Authorization: Bearer YOUR_API_KEY", getKey: `https://${ctx.names.brand}.example/settings/api`, docs },
      x402Wallet: { header: SIWX_HEADER, legacyHeader: SIWX_LEGACY_HEADER, topUp: "POST /api/v1/x402/top-up", docs: `${docs}/endpoint/x402/top-up` },
    };
  };
  const resourceOf = (req: EmulatorRequest) => ({ url: req.url.toString(), description: `${ctx.names.brand} API`, mimeType: "application/json" });

  async function settleOnce(viaSignatureHeader: boolean, raw: Record<string, unknown>): Promise<Settled> {
    const version = raw.x402Version;
    if (version !== 1 && version !== 2) paymentError(400, "X402_INVALID_PAYMENT", "Unsupported x402Version");
    // The v2 shape names the requirement it accepts; the v1 shape carries scheme and network at its top. The
    // service's own SDK sends the v1 shape through the legacy `x402` package, labelled with the 402's version (2),
    // so in the legacy headers the shape decides, not the label.
    const v2Shape = raw.accepted !== undefined;
    const accepted = (v2Shape ? raw.accepted : undefined) as Record<string, unknown> | undefined;
    // PAYMENT-SIGNATURE is the v2 header; v1 payloads come in X-402-Payment / X-PAYMENT
    if (viaSignatureHeader && !(version === 2 && v2Shape)) {
      paymentError(400, "X402_INVALID_PAYMENT", "PAYMENT-SIGNATURE carries x402 v2 payloads (with `accepted`); send v1 payloads in X-402-Payment");
    }
    if (v2Shape) {
      // the x402 reference rule: `accepted` is one of the offered requirements, exactly (amount, payee, validity...)
      if (!accepted || typeof accepted !== "object") paymentError(400, "X402_INVALID_PAYMENT", "`accepted` is not a payment requirement");
      if (!accepts().some((offer) => isDeepStrictEqual(offer, accepted))) {
        paymentError(400, "PAYMENT_VERIFICATION_FAILED", "Payment verification failed: `accepted` does not match any offered payment requirement", {
          reason: "accepted_requirement_mismatch",
        });
      }
    }
    const network = normalizeNetwork(accepted?.network ?? raw.network);
    const scheme = accepted?.scheme ?? raw.scheme;
    if (scheme !== "exact") paymentError(400, "X402_INVALID_PAYMENT", "Only the exact scheme is accepted");
    const rail = network ? rails.get(network) : undefined;
    if (!rail) paymentError(400, "X402_INVALID_PAYMENT", `Network ${String(network)} is not accepted here`, { reason: "unsupported_network", accepted: [...rails.keys()] });
    if (!raw.payload || typeof raw.payload !== "object") paymentError(400, "X402_INVALID_PAYMENT", "Payment payload missing");
    const amount = rail.amountOf(raw, accepted);
    if (amount === undefined) paymentError(400, "X402_INVALID_PAYMENT", "Payment amount unreadable");
    if (accepted?.amount !== undefined && String(accepted.amount) !== amount.toString()) {
      paymentError(400, "X402_INVALID_PAYMENT", "accepted.amount differs from the signed amount");
    }
    const usd = Number(amount) / 10 ** DECIMALS;
    if (usd < minimumTopUpUsd || usd > maximumTopUpUsd) {
      paymentError(400, "X402_INVALID_PAYMENT", `Top-ups must be between $${minimumTopUpUsd} and $${maximumTopUpUsd}`, { reason: "amount_out_of_range", amountUsd: usd });
    }
    const requirement = rail.requirement(amount);
    if (accepted) {
      const sameAddr = (a: unknown, b: unknown) =>
        typeof a === "string" && typeof b === "string" && (network!.startsWith("eip155:") ? a.toLowerCase() === b.toLowerCase() : a === b);
      if (!sameAddr(accepted.asset, requirement.asset)) paymentError(400, "X402_INVALID_PAYMENT", "The payment is not in the accepted asset", { reason: "wrong_asset" });
      if (!sameAddr(accepted.payTo, requirement.payTo)) paymentError(400, "X402_INVALID_PAYMENT", "The payment is not to the service's wallet", { reason: "wrong_payee" });
    }
    // the facilitator verifies against our requirement, never against what the client claims
    const payload = { x402Version: 2, accepted: requirement, payload: raw.payload, resource: raw.resource };
    let result: Awaited<ReturnType<Rail["settle"]>>;
    try {
      result = await rail.settle(payload, requirement);
    } catch (err) {
      paymentError(500, "X402_INVALID_PAYMENT", "Settlement failed unexpectedly", { reason: String((err as Error)?.message ?? err).slice(0, 300) });
    }
    if (!result.success || !result.payer) {
      paymentError(400, "PAYMENT_VERIFICATION_FAILED", "Payment verification or settlement failed", { reason: result.errorReason ?? "unknown" });
    }
    const payer = network!.startsWith("eip155:") ? getAddress(result.payer) : result.payer;
    const account = ctx.ledger.wallet(payer, ctx.options.walletStartingUsd ?? 0);
    const entry = ctx.ledger.topUp(account, usd, { transaction: result.transaction, network: network!, paidAtomic: amount.toString() });
    return {
      walletAddress: account.id,
      amountCredited: usd,
      newBalance: account.usd,
      paymentId: `payment_${entry.id}`,
      receipt: { success: true, network: network!, payer, transaction: result.transaction },
    };
  }

  async function topUp(req: EmulatorRequest): Promise<EmulatorResponse> {
    const header = req.headers["payment-signature"] ?? req.headers["x-402-payment"] ?? req.headers["x-payment"];
    if (!header) {
      // No rail: the published shape still (its body admits no other field), offering nothing; the reason goes
      // in the x402 object's own `error`. Clients fail on an empty `accepts` at once, and a 402 is never retried.
      const error = rails.size > 0 ? "Payment required" : NO_PAYMENT_RAIL_MESSAGE;
      const paymentRequired = { x402Version: 2, error, resource: resourceOf(req), accepts: accepts() };
      return { status: 402, headers: { "PAYMENT-REQUIRED": base64Json(paymentRequired) }, body: { x402Version: 2, accepts: paymentRequired.accepts } };
    }
    // a payment no rail could settle: the published 400, saying why (never a 5xx a client would retry)
    if (rails.size === 0) paymentError(400, "X402_INVALID_PAYMENT", NO_PAYMENT_RAIL_MESSAGE, { reason: "no_payment_rail" });
    let raw: Record<string, unknown>;
    try {
      raw = JSON.parse(Buffer.from(header.trim(), "base64").toString("utf8")) as Record<string, unknown>;
      if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw new Error("not an object");
    } catch {
      paymentError(400, "X402_INVALID_PAYMENT", "Invalid payment header: not base64 JSON");
    }
    const fingerprint = createHash("sha256").update(JSON.stringify(raw.payload ?? null)).digest("hex");
    const earlier = settlements.get(fingerprint);
    if (earlier) {
      // A re-send of a payment seen before: its nonce is spent once it settled. Like the live service (and the
      // chain), answer that, never a second 200; a twin still settling waits for it and shares its refusal.
      await earlier;
      paymentError(400, "PAYMENT_VERIFICATION_FAILED", "Payment verification failed: the authorization's nonce was already used", {
        reason: "nonce_already_used",
      });
    }
    const v2 = req.headers["payment-signature"] !== undefined;
    const slow = o.settleDelayMs !== undefined && slowed < (o.delayedSettlements ?? 1);
    if (slow) slowed++;
    // a slow facilitator: the payment is taken in (a twin waits for it) and settles settleDelayMs later
    const settlement = slow ? sleep(o.settleDelayMs!).then(() => settleOnce(v2, raw)) : settleOnce(v2, raw);
    settlements.set(fingerprint, settlement);
    // a refused payment may be corrected and re-signed; only settled ones are remembered
    settlement.catch(() => settlements.delete(fingerprint));
    const done = await settlement;
    if (o.topUpFailures && failed < o.topUpFailures) {
      failed++;
      return { status: 503, body: { error: "Service temporarily unavailable" } };
    }
    if (o.topUpResponseDelayMs && delayed < (o.delayedTopUps ?? 1)) {
      delayed++;
      await sleep(o.topUpResponseDelayMs);
    }
    const { receipt, ...data } = done;
    return {
      status: 200,
      headers: { "PAYMENT-RESPONSE": base64Json(receipt) },
      body: { success: true, data },
    };
  }

  function ownWallet(req: EmulatorRequest, caller: Caller): Account {
    const wanted = req.params.wallet ?? "";
    if (!/^(0x[a-fA-F0-9]{40}|[1-9A-HJ-NP-Za-km-z]{32,44})$/.test(wanted)) {
      throw new EmulatorHttpError(400, { error: "Invalid wallet address", details: { walletAddress: { _errors: ["Expected an EVM or Solana address"] } } });
    }
    if (caller.kind !== "wallet") {
      // published: 401 StandardError `{error}` (no invented code)
      throw new EmulatorHttpError(401, { error: "Sign in with the wallet (SIGN-IN-WITH-X) to read its x402 data" });
    }
    const same = wanted.startsWith("0x") ? wanted.toLowerCase() === caller.address.toLowerCase() : wanted === caller.address;
    if (!same) throw new EmulatorHttpError(403, { error: "The signed-in wallet does not match the requested wallet" });
    return caller.account;
  }

  const routes: Route[] = [
    { method: "POST", pattern: "/x402/top-up", auth: "public", handler: (req) => topUp(req) },
    {
      method: "GET",
      pattern: "/x402/balance/:wallet",
      auth: "optional",
      handler: (req, _ctx, caller) => {
        const account = ownWallet(req, caller);
        return {
          status: 200,
          body: {
            success: true,
            data: {
              walletAddress: account.id,
              balanceUsd: account.usd,
              canConsume: account.usd >= minimumBalance(),
              minimumTopUpUsd,
              suggestedTopUpUsd,
            },
          },
        };
      },
    },
    {
      method: "GET",
      pattern: "/x402/transactions/:wallet",
      auth: "optional",
      handler: (req, _ctx, caller) => {
        const account = ownWallet(req, caller);
        const limit = req.query.has("limit") ? Number(req.query.get("limit")) : 50;
        const offset = req.query.has("offset") ? Number(req.query.get("offset")) : 0;
        if (!Number.isInteger(limit) || limit < 1 || limit > 100 || !Number.isInteger(offset) || offset < 0) {
          throw new EmulatorHttpError(400, { error: "Invalid pagination", details: { limit: "1..100", offset: ">= 0" } });
        }
        const newestFirst = [...account.entries].reverse();
        const page = newestFirst.slice(offset, offset + limit).map((e) => ({
          id: e.id,
          amount: e.amount,
          balanceAfter: e.balanceAfter,
          type: e.type,
          createdAt: e.createdAt,
          requestId: e.requestId ?? null,
          modelId: e.modelId ?? null,
        }));
        return {
          status: 200,
          body: {
            success: true,
            data: {
              walletAddress: account.id,
              currentBalance: account.usd,
              transactions: page,
              pagination: { limit, offset, hasMore: offset + limit < newestFirst.length },
            },
          },
        };
      },
    },
    ...[...rails.values()].flatMap((r) => r.routes ?? []),
  ];

  return {
    // read on every request, so a test can move the threshold of a running emulator
    get minimumBalanceUsd() {
      return minimumBalance();
    },
    routes,
    async verifySiwx(header, req) {
      const who = await verifySiwxHeader(header, req, nonces, ctx.now());
      // first sight of a Solana wallet: its token account gets test USDC on LiteSVM, so it can pay
      if (who.chain === "solana" && solana) await solana.welcome(who.address);
      return who;
    },
    /** the Solana rail (LiteSVM), when it runs */
    solana,
    discovery402(req) {
      const resource = resourceOf(req);
      const extensions = { "sign-in-with-x": { info: siwxInfo(req), supportedChains } };
      const paymentRequired = {
        x402Version: 2,
        error: "Authentication required: pass an API key (Authorization: Bearer) or sign in with a wallet (SIGN-IN-WITH-X)",
        resource,
        accepts: accepts(),
        extensions,
      };
      return {
        status: 402,
        headers: { "PAYMENT-REQUIRED": base64Json(paymentRequired) },
        body: { ...paymentRequired, authOptions: authOptions() },
      };
    },
    insufficientCredit402(req, _ctx, account) {
      const offered = accepts();
      // Base when it is offered, else the rail that is (the instructions must name a payee the client can pay);
      // with no rail, empty payee and token: never a made-up one
      const base = offered.find((a) => String(a.network).startsWith("eip155:")) ?? offered[0];
      const error = offered.length > 0 ? "Payment required" : NO_PAYMENT_RAIL_MESSAGE;
      const paymentRequired = { x402Version: 2, error, resource: resourceOf(req), accepts: offered };
      return {
        status: 402,
        headers: { "PAYMENT-REQUIRED": base64Json(paymentRequired) },
        body: {
          error: "Payment required",
          code: "PAYMENT_REQUIRED",
          reason: "insufficient_balance",
          message:
            `Insufficient x402 balance: $${account.usd.toFixed(6)} is under the $${minimumBalance()} minimum` +
            (offered.length > 0 ? "" : `. ${NO_PAYMENT_RAIL_MESSAGE}`),
          currentBalanceUsd: account.usd,
          minimumBalanceUsd: minimumBalance(),
          description: `${ctx.names.brand} API`,
          suggestedTopUpUsd,
          minimumTopUpUsd,
          supportedTokens: ["USDC"],
          supportedChains: [...rails.keys()].map((n) => (n.startsWith("eip155:") ? "base" : "solana")),
          topUpInstructions: {
            step1: "POST /api/v1/x402/top-up with no payment header to get payment requirements",
            step2: "Choose a payment option from accepts and sign a USDC transfer authorization using the x402 SDK",
            step3: "POST /api/v1/x402/top-up with the signed PAYMENT-SIGNATURE header",
            receiverWallet: String(base?.payTo ?? ""),
            tokenAddress: String(base?.asset ?? ""),
            tokenDecimals: DECIMALS,
            network: String(base?.network ?? "eip155:8453"),
            minimumAmountUsd: minimumTopUpUsd,
          },
          siwxChallenge: { info: siwxInfo(req), supportedChains },
        },
      };
    },
    async close() {
      for (const r of rails.values()) await r.close?.();
    },
  };
}
