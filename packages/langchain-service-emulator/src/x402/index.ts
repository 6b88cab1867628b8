/**
 * The emulator's wallet sign-in and payments (x402): SIWX verified for real, the discovery and
 * insufficient-credit 402s, `/x402/top-up` settling for real (top-up.ts), `/x402/balance/:wallet` and
 * `/x402/transactions/:wallet`, the x402 routes' own limits (route-limits.ts), and wallets linked to an account
 * with staking-token credit (billed first; a 402 then is not cured by a top-up).
 *
 * Options (`startEmulator({ x402: {...} })`, X402EmulatorOptions in options.ts): minimumBalanceUsd (0.10),
 * suggestedTopUpUsd (10), minimumTopUpUsd (5), maximumTopUpUsd (10000), solana (true: a LiteSVM rail when
 * `litesvm` is installed), the slow and failing top-up knobs, and where the live service and the seed differ
 * (`X-Balance-Remaining`, 409 while settling and once credited, the refusal codes of top-ups and of sign-ins, how a
 * sign-in's domain and time are checked, which of two credentials wins, route limits, the read routes' sign-in answers).
 */
import { randomUUID } from "node:crypto";
import { BASE_MAINNET, SIWX_LEGACY_HEADER, SIWX_HEADER, SOLANA_MAINNET } from "langchain-service";
import { usdToAtomic } from "./encoding.js";
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
import { X402Behaviour, type Rail, type X402EmulatorOptions } from "./options.js";
import { RouteLimits } from "./route-limits.js";
import { NonceStore, SIWX_INVALID, verifySiwxHeader } from "./siwx.js";
import { createContractSignatureCheck, type ContractSignatureCheck } from "./smart-accounts.js";
import type { SolanaRail } from "./solana.js";
import { base64Json, createTopUp, DECIMALS, NO_PAYMENT_RAIL_MESSAGE } from "./top-up.js";

export type { X402EmulatorOptions } from "./options.js";
export { NO_PAYMENT_RAIL_MESSAGE } from "./top-up.js";

const warned = new Set<string>();
/** The missing-litesvm notice, once per process and wording (every emulator start would repeat it). */
function warnOnce(message: string): void {
  if (warned.has(message)) return;
  warned.add(message);
  console.warn(message);
}

export type { Rail } from "./options.js";

const SIWX_STATEMENT = "Sign in with your wallet to use the API";
/** the x402 routes that read a wallet's data (sign-in required, per-wallet limits) */
const READ_ROUTE = /^\/x402\/(balance|transactions)\/[^/]+$/;

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

export async function createX402Hooks(ctx: EmulatorContext): Promise<X402Hooks & { solana?: SolanaRail }> {
  const o = (ctx.options.x402 ?? {}) as X402EmulatorOptions;
  const behaviour = new X402Behaviour(o, ctx);
  const limits = new RouteLimits(behaviour, ctx.now);
  const minimumBalance = () => o.minimumBalanceUsd ?? 0.1;
  const suggestedTopUpUsd = o.suggestedTopUpUsd ?? 10;
  const minimumTopUpUsd = o.minimumTopUpUsd ?? 5;
  const maximumTopUpUsd = o.maximumTopUpUsd ?? 10_000;
  const nonces = new NonceStore();
  const rails = new Map<string, Rail>();
  // smart accounts sign in on the local chain (EIP-1271, ERC-6492); without one, only keys do
  let contractSignatures: ContractSignatureCheck | undefined;
  if (ctx.chain) {
    contractSignatures = await createContractSignatureCheck(ctx.chain);
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
  for (const [address, diemUsd] of Object.entries(o.linkedWallets ?? {})) ctx.ledger.linkWallet(address, { diemUsd });

  const accepts = () => [...rails.values()].map((r) => r.requirement(usdToAtomic(minimumTopUpUsd, DECIMALS)));
  /** what an inference 402's header offers: live, the suggested amount and a bare `solana` (not the offer to sign) */
  const challengeAccepts = (offered: Record<string, unknown>[]) =>
    behaviour.liveChallengeOffer
      ? offered.map((a) => ({
          ...a,
          amount: String(usdToAtomic(suggestedTopUpUsd, DECIMALS)),
          network: String(a.network).startsWith("solana:") ? "solana" : a.network,
        }))
      : offered;

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
    { chainId: BASE_MAINNET, type: "eip191" },
    { chainId: SOLANA_MAINNET, type: "ed25519" },
  ];
  const authOptions = () => {
    const docs = `https://docs.${ctx.names.brand}.example/api-reference`;
    return {
      apiKey: { header: "Authorization: Bearer YOUR_API_KEY", getKey: `https://${ctx.names.brand}.example/settings/api`, docs },
      x402Wallet: {
        header: SIWX_HEADER,
        legacyHeader: SIWX_LEGACY_HEADER,
        topUp: "POST /api/v1/x402/top-up",
        docs: `${docs}/endpoint/x402/top-up`,
      },
    };
  };
  const resourceOf = (req: EmulatorRequest) => ({
    url: req.url.toString(),
    description: `${ctx.names.brand} API`,
    mimeType: "application/json",
  });

  /** The 402 of a request without credentials: the x402 object itself, with the sign-in challenge and `authOptions`. */
  function discovery(req: EmulatorRequest, offered: Record<string, unknown>[]): EmulatorResponse {
    const extensions = { "sign-in-with-x": { info: siwxInfo(req), supportedChains } };
    const paymentRequired = {
      x402Version: 2,
      error: "Authentication required: pass an API key (Authorization: Bearer) or sign in with a wallet (SIGN-IN-WITH-X)",
      resource: resourceOf(req),
      accepts: offered,
      extensions,
    };
    return {
      status: 402,
      headers: { "PAYMENT-REQUIRED": base64Json(paymentRequired) },
      body: { ...paymentRequired, authOptions: authOptions() },
    };
  }

  /** The 402 of a wallet that cannot be served: its credit is under the minimum, or its linked account's DIEM is. */
  function insufficientCredit(req: EmulatorRequest, account: Account, message?: string): EmulatorResponse {
    const offered = accepts();
    // Base when it is offered, else the rail that is (the instructions must name a payee the client can pay);
    // with no rail, empty payee and token: never a made-up one
    const base = offered.find((a) => String(a.network).startsWith("eip155:")) ?? offered[0];
    const error = offered.length > 0 ? "Payment required" : NO_PAYMENT_RAIL_MESSAGE;
    const paymentRequired = { x402Version: 2, error, resource: resourceOf(req), accepts: challengeAccepts(offered) };
    return {
      status: 402,
      headers: { "PAYMENT-REQUIRED": base64Json(paymentRequired) },
      body: {
        error: "Payment required",
        code: "PAYMENT_REQUIRED",
        reason: "insufficient_balance",
        message:
          (message ?? `Insufficient x402 balance: $${account.usd.toFixed(6)} is under the $${minimumBalance()} minimum`) +
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
          network: String(base?.network ?? BASE_MAINNET),
          minimumAmountUsd: minimumTopUpUsd,
        },
        siwxChallenge: { info: siwxInfo(req), supportedChains },
      },
    };
  }

  /**
   * The wallet whose data a read route asks for, once its limit admitted the request: a wallet caller reading its
   * own. Without a sign-in: live, the discovery 402 with nothing to pay (only the sign-in matters here); seed, 401.
   */
  function ownWallet(req: EmulatorRequest, caller: Caller, route: "balance" | "transactions"): Account | EmulatorResponse {
    const wanted = req.params.wallet ?? "";
    if (!/^(0x[a-fA-F0-9]{40}|[1-9A-HJ-NP-Za-km-z]{32,44})$/.test(wanted)) {
      throw new EmulatorHttpError(400, {
        error: "Invalid wallet address",
        details: { walletAddress: { _errors: ["Expected an EVM or Solana address"] } },
      });
    }
    const limited = limits.admit(route, req);
    if (limited) return limited;
    if (caller.kind === "anonymous" && behaviour.liveReadAuth) return discovery(req, []);
    if (caller.kind !== "wallet") {
      // published: 401 StandardError `{error}` (no invented code)
      throw new EmulatorHttpError(401, { error: "Sign in with the wallet (SIGN-IN-WITH-X) to read its x402 data" });
    }
    const same = wanted.startsWith("0x") ? wanted.toLowerCase() === caller.address.toLowerCase() : wanted === caller.address;
    if (!same) throw new EmulatorHttpError(403, { error: "The signed-in wallet does not match the requested wallet" });
    return caller.account;
  }

  const topUp = createTopUp({ ctx, o, behaviour, limits, rails, accepts, resourceOf, minimumTopUpUsd, maximumTopUpUsd });
  const routes: Route[] = [
    { method: "POST", pattern: "/x402/top-up", auth: "public", handler: (req) => topUp(req) },
    {
      method: "GET",
      pattern: "/x402/balance/:wallet",
      auth: "optional",
      handler: (req, _ctx, caller) => {
        const own = ownWallet(req, caller, "balance");
        if ("status" in own) return own;
        const account = own;
        // DIEM left this epoch on a linked account: shown apart, and it alone lets the wallet consume
        const diem = ctx.ledger.linkedAccount(account)?.diemUsd ?? 0;
        return {
          status: 200,
          body: {
            success: true,
            data: {
              walletAddress: account.id,
              balanceUsd: account.usd,
              canConsume: account.usd >= minimumBalance() || diem > 0,
              minimumTopUpUsd,
              suggestedTopUpUsd,
              ...(diem > 0 ? { diemBalanceUsd: diem } : {}),
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
        const own = ownWallet(req, caller, "transactions");
        if ("status" in own) return own;
        const account = own;
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
    get balanceHeader() {
      return behaviour.balanceHeader;
    },
    routes,
    async verifySiwx(header, req) {
      let who: Awaited<ReturnType<typeof verifySiwxHeader>>;
      try {
        who = await verifySiwxHeader(header, req, nonces, ctx.now(), { ...behaviour.signInRules, contractSignatures });
      } catch (err) {
        // live: the read routes answer a generic 401, without the reason inference routes name
        if (err instanceof EmulatorHttpError && READ_ROUTE.test(req.path) && behaviour.liveReadAuth)
          throw new EmulatorHttpError(401, { error: SIWX_INVALID.error });
        throw err;
      }
      // first sight of a Solana wallet: its token account gets test USDC on LiteSVM, so it can pay
      if (who.chain === "solana" && solana) await solana.welcome(who.address);
      return who;
    },
    /** the Solana rail (LiteSVM), when it runs */
    solana,
    discovery402(req) {
      return discovery(req, accepts());
    },
    insufficientCredit402(req, _ctx, account) {
      return insufficientCredit(req, account);
    },
    walletRefusal(req, _ctx, account) {
      // a linked account with DIEM left is billed first: its DIEM decides, whatever the wallet's own credit
      const linked = ctx.ledger.linkedAccount(account);
      if (linked && linked.diemUsd > 0) {
        if (linked.diemUsd >= minimumBalance()) return undefined;
        return insufficientCredit(
          req,
          account,
          `Insufficient balance on the linked account: $${linked.diemUsd.toFixed(6)} of DIEM is left this epoch and it is billed first; ` +
            "a top-up of the wallet does not change this (wait for the next epoch or fund the linked account)",
        );
      }
      return account.usd < minimumBalance() ? insufficientCredit(req, account) : undefined;
    },
    async close() {
      for (const r of rails.values()) await r.close?.();
    },
  };
}
