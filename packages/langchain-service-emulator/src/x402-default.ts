/**
 * The x402 hooks the server uses when the wallet module (`./x402/index.js`) is not there: wallet sign-in is
 * refused with 401, and a request without credentials gets the discovery 402 in its published shape, but
 * with no payment options (`accepts: []`): without a chain there is nothing a client could pay, and a
 * made-up payee must never be offered. `loadX402Hooks` picks the wallet module when it exists, else these.
 */
import { SIWX_HEADER, SIWX_LEGACY_HEADER } from "langchain-service";
import {
  EmulatorHttpError,
  isLiveMode,
  type Account,
  type EmulatorContext,
  type EmulatorOptions,
  type EmulatorRequest,
  type EmulatorResponse,
  type X402Hooks,
} from "./types.js";

export const DEFAULT_MINIMUM_BALANCE_USD = 0.1;
export const MINIMUM_TOP_UP_USD = 5;

function authOptions(ctx: EmulatorContext) {
  const docs = `https://docs.${ctx.names.brand}.example/api-reference`;
  return {
    apiKey: {
      header: "Authorization: Bearer YOUR_API_KEY",
      getKey: `https://${ctx.names.brand}.example/settings/api`,
      docs,
    },
    x402Wallet: {
      header: SIWX_HEADER,
      legacyHeader: SIWX_LEGACY_HEADER,
      topUp: "POST /api/v1/x402/top-up",
      docs: `${docs}/endpoint/x402/top-up`,
    },
  };
}

/** `options`: the emulator's, for what differs between live and seed (`x402.balanceHeader`, else the mode). */
export function createDefaultX402Hooks(options: EmulatorOptions = {}): X402Hooks {
  const hooks: X402Hooks = {
    minimumBalanceUsd: DEFAULT_MINIMUM_BALANCE_USD,
    // no wallet signs in here, so none is ever told; still the mode's answer, for a caller that asks
    balanceHeader: (options.x402 as { balanceHeader?: boolean } | undefined)?.balanceHeader ?? !isLiveMode(options),
    routes: [],
    async verifySiwx(): Promise<never> {
      // the published refusal; why, for people reading it, in details
      throw new EmulatorHttpError(401, {
        error: "Invalid Sign-in-with-x signature",
        code: "X402_INVALID_SIGN_IN",
        details: { reason: "unavailable", message: "Wallet sign-in is not available on this emulator (the x402 module is not installed)" },
      });
    },
    discovery402(req: EmulatorRequest, ctx: EmulatorContext): EmulatorResponse {
      const paymentRequired = {
        x402Version: 2,
        error: "Authentication required: pass an API key (Authorization: Bearer) or sign in with a wallet",
        resource: { url: req.url.toString(), description: `${ctx.names.brand} API`, mimeType: "application/json" },
        accepts: [] as unknown[],
      };
      return {
        status: 402,
        headers: { "PAYMENT-REQUIRED": Buffer.from(JSON.stringify(paymentRequired)).toString("base64") },
        body: { ...paymentRequired, extensions: {}, authOptions: authOptions(ctx) },
      };
    },
    insufficientCredit402(_req: EmulatorRequest, ctx: EmulatorContext, account: Account): EmulatorResponse {
      return {
        status: 402,
        body: {
          error: "Payment required",
          code: "PAYMENT_REQUIRED",
          reason: "insufficient_balance",
          message: `Wallet credit is below the minimum of $${DEFAULT_MINIMUM_BALANCE_USD.toFixed(2)}; top up with POST /api/v1/x402/top-up`,
          currentBalanceUsd: account.usd,
          minimumBalanceUsd: DEFAULT_MINIMUM_BALANCE_USD,
          suggestedTopUpUsd: 10,
          minimumTopUpUsd: MINIMUM_TOP_UP_USD,
          supportedTokens: [],
          supportedChains: [],
          topUpInstructions: {
            step1: "POST /api/v1/x402/top-up without a payment header to get the payment requirements",
            step2: "Sign a USDC payment for one of the `accepts` entries",
            step3: "POST /api/v1/x402/top-up again with the PAYMENT-SIGNATURE header",
            minimumAmountUsd: MINIMUM_TOP_UP_USD,
          },
          authOptions: authOptions(ctx),
        },
      };
    },
    walletRefusal(req: EmulatorRequest, ctx: EmulatorContext, account: Account): EmulatorResponse | undefined {
      return account.usd < DEFAULT_MINIMUM_BALANCE_USD ? hooks.insufficientCredit402(req, ctx, account) : undefined;
    },
  };
  return hooks;
}

/** The wallet module when it is there, else the default hooks (wallet sign-in refused, static discovery 402). */
export async function loadX402Hooks(ctx: EmulatorContext): Promise<X402Hooks> {
  let mod: { createX402Hooks(ctx: EmulatorContext): Promise<X402Hooks> | X402Hooks };
  try {
    mod = await import("./x402/index.js");
  } catch (err) {
    if (isMissingModule(err, "x402")) return createDefaultX402Hooks(ctx.options);
    throw err;
  }
  return mod.createX402Hooks(ctx);
}

/**
 * True when `err` says the module `<dir>/index` itself is absent, not one of its own imports: the missing
 * specifier is the quoted part of "Cannot find module '<specifier>' imported from <importer>".
 */
export function isMissingModule(err: unknown, dir: string): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  if (e?.code !== "ERR_MODULE_NOT_FOUND") return false;
  const missing = /Cannot find (?:module|package) '([^']+)'/.exec(e.message ?? "")?.[1] ?? "";
  return new RegExp(`(^|[\\\\/])${dir}[\\\\/]index(\\.[cm]?[jt]s)?$`).test(missing);
}
