/**
 * The assembly of the one fetch stack, above the faces that use it: the transport (`src/http/`) with a
 * credential provider, the x402 payment layer of a wallet, and the fleet store handed in. Every face
 * (ChatService, ServiceClient, ServiceEmbeddings, the tools) builds its stack here, or shares one built here.
 *
 * The x402 code (and ethers, @x402/*) loads on a wallet stack's first use, so a chat-only user never pays for it.
 */
import { ConfigurationError } from "./http/errors.js";
import { normalizeBaseUrl, DEFAULT_BRAND } from "./http/config.js";
import { createTransport, type AuthProvider, type FetchLayer, type TransportOptions } from "./http/fetch-stack.js";
import { sharedLimitStore } from "./http/shared-limits.js";
import { contextOf, type ServiceContext } from "./http/context.js";
import type { X402Wallet } from "./x402/wallets.js";
import type { PaymentPolicy, PaymentPolicyOptions } from "./x402/policy.js";
import type { PaymentEvent } from "./x402/events.js";
import type { X402PaymentController, X402PaymentOptions } from "./x402/layer.js";
import type { PaymentStore } from "./store/types.js";
import type { ServiceFetch } from "./api/service-fetch.js";
import { brandNames } from "./http/config.js";
import { SpendBudget } from "./spend/budget.js";
import { SpendLog } from "./spend/log.js";
import { spendLayer } from "./spend/layer.js";
import { modelRecordsFor } from "./models/records.js";
import { itemCredits } from "./crypto-rpc/methods.js";
import { normalizeSignInDomain } from "./x402/sign-in-domain.js";
import { checkTopUpOptions } from "./x402/top-up-options.js";

export interface FetchStackOptions extends Omit<TransportOptions, "limitStore"> {
  /**
   * A wallet (`EvmWallet` | `SolanaWallet`) to sign in with instead of an API key (SIWX on every attempt) and
   * to pay with (x402 top-up on 402, within `payment`).
   */
  wallet?: X402Wallet;
  /**
   * The domain wallet sign-ins name (with `wallet`). The service checks it against its own hosts, not the host a
   * request reached: through a proxy or a custom base URL, set the service's host (e.g. `api.example.ai`). Default:
   * the base URL's host.
   */
  signInDomain?: string;
  /** the owner's payment policy for automatic top-ups (with `wallet`); share one instance to share its caps */
  payment?: PaymentPolicy | PaymentPolicyOptions;
  /** called on each payment event (with `wallet`) */
  onPayment?: (event: PaymentEvent) => void;
  /** Solana RPC used to build Solana payments (with a `SolanaWallet`) */
  solanaRpcUrl?: string;
  /** how top-ups are sent (with `wallet`): per-attempt timeout, re-sends of the same signed payment, pause between, the fleet lease */
  topUp?: Partial<Pick<X402PaymentOptions, "topUpTimeoutMs" | "maxResends" | "resendDelayMs" | "topUpLeaseMs">>;
  /**
   * Where wallet budgets, payee pins and top-up leases live (default: this process's MemoryStore, shared by every
   * stack). A fleet store (`RedisStore`) also holds the pacing windows and the abuse guard's failure window, so
   * every process on one key or wallet shares them; when it fails, those two fall back to per-process limits
   * (one warning) while payments fail closed.
   */
  store?: PaymentStore;
  /** a custom payment layer, placed outside retries (built from `wallet` + `payment` when absent) */
  paymentLayer?: FetchLayer;
  /**
   * A cap on credit spent by every request of this stack: each reserves its worst case first and is refused
   * (`BudgetExceededError`, nothing sent) when it does not fit; settled to the real cost after. Share one
   * `SpendBudget` between faces to share the cap; a request can carry more (`service.spend`, a call's `budget`).
   */
  budget?: SpendBudget;
  /** receipts: every charge and payment of this stack, for `toJSONL()` and `reconcile(client)` */
  spendLog?: SpendLog;
}

export type { ServiceFetch } from "./api/service-fetch.js";

/** The stack options a face (ChatService, ServiceEmbeddings) takes among its own fields, under the same names. */
const FACE_STACK_OPTIONS = [
  "apiKey",
  "baseUrl",
  "brand",
  "timeout",
  "idleTimeout",
  "totalTimeout",
  "maxResponseBytes",
  "maxEventBytes",
  "maxRequestBytes",
  "fetch",
  "retry",
  "abuseGuard",
  "auth",
  "wallet",
  "signInDomain",
  "payment",
  "onPayment",
  "solanaRpcUrl",
  "topUp",
  "store",
  "pacing",
  "concurrency",
  "defaultHeaders",
  "budget",
  "spendLog",
  "context",
] as const satisfies readonly (keyof FetchStackOptions)[];

/** @internal Picks a face's stack options out of its fields (nothing else of them reaches the stack). */
export function faceStackOptions(fields: Pick<FetchStackOptions, (typeof FACE_STACK_OPTIONS)[number]>): FetchStackOptions {
  const out: Record<string, unknown> = {};
  for (const k of FACE_STACK_OPTIONS) if (fields[k] !== undefined) out[k] = fields[k];
  return out as FetchStackOptions;
}

/**
 * @internal The built stack a face was handed, if any: `serviceFetch`, or a `ServiceClient`'s (`client`), so that
 * many models and tools send through one stack (one guard, one pacing window, one gate, one sign-in state).
 * Checked structurally: the chat entry does not load the client.
 */
export function sharedStackOf(fields: {
  serviceFetch?: ServiceFetch;
  client?: { readonly fetch: ServiceFetch };
  context?: ServiceContext;
}): ServiceFetch | undefined {
  const { serviceFetch, client } = fields;
  const shared = client === undefined ? serviceFetch : stackOfClient(client, serviceFetch);
  // a context beside a built stack would be ignored: the face shares the stack's, so another one is a mistake
  if (shared !== undefined && fields.context !== undefined && fields.context !== shared.context) {
    throw new ConfigurationError(
      "context differs from the context of the given client or serviceFetch (its stack's is used): give one or the other",
    );
  }
  return shared;
}

function stackOfClient(client: unknown, serviceFetch: ServiceFetch | undefined): ServiceFetch {
  const fetch = (client as { fetch?: unknown } | null)?.fetch as ServiceFetch | undefined;
  if (typeof fetch !== "function" || typeof fetch.url !== "function") throw new ConfigurationError("client must be a ServiceClient");
  if (serviceFetch !== undefined && serviceFetch !== fetch)
    throw new ConfigurationError("give client or serviceFetch, not two different stacks");
  return fetch;
}

/** Wallet sign-in whose signing code loads on the first request. */
function lazyWalletAuth(
  wallet: X402Wallet,
  x402: Promise<typeof import("./x402/index.js")>,
  signInDomain: string | undefined,
  context: ServiceContext,
): AuthProvider {
  const provider = x402.then((m) => m.createWalletAuth(wallet, { signInDomain, clock: context.clock }));
  provider.catch(() => {});
  return {
    identity: `wallet:${wallet.address}`,
    kind: "wallet",
    clockSensitive: true,
    headers: async (url, init) => (await provider).headers(url, init),
  };
}

/** Builds the stack every face uses. Throws `ConfigurationError` on bad options, before any request. */
export function createServiceFetch(options: FetchStackOptions = {}): ServiceFetch {
  // the transport's options are checked by its layers (src/http/layers/); the payment layer's here
  checkTopUpOptions(options.topUp);
  const wallet = options.auth ? undefined : options.wallet;
  if (wallet !== undefined && typeof (wallet as { address?: unknown })?.address !== "string") {
    throw new ConfigurationError("wallet must be an EvmWallet or a SolanaWallet");
  }
  const {
    wallet: _w,
    signInDomain: domain,
    payment,
    onPayment: ownerOnPayment,
    solanaRpcUrl,
    topUp,
    store,
    paymentLayer: customPayment,
    budget,
    spendLog,
    ...transport
  } = options;
  // checked now, before any request (the signing code loads later)
  const signInDomain = domain !== undefined ? normalizeSignInDomain(domain) : undefined;
  const context = contextOf(options.context);
  if (budget !== undefined && !(budget instanceof SpendBudget)) throw new ConfigurationError("budget must be a SpendBudget");
  if (spendLog !== undefined && !(spendLog instanceof SpendLog)) throw new ConfigurationError("spendLog must be a SpendLog");
  // the stack's log records its payments as the owner's listener hears them
  const onPayment = spendLog
    ? (event: PaymentEvent) => {
        spendLog.recordPaymentEvent(event);
        ownerOnPayment?.(event);
      }
    : ownerOnPayment;
  // A wallet replaces the API key: it signs in with SIWX on every attempt and pays on 402.
  const x402 = wallet ? import("./x402/index.js") : undefined;
  let controller: Promise<X402PaymentController> | undefined;
  let paymentLayer = customPayment;
  if (!paymentLayer && wallet && x402) {
    const baseUrl = normalizeBaseUrl(options.baseUrl);
    // made as the list is composed, once every layer has checked its options
    paymentLayer = (next) => {
      const ready = (controller ??= x402.then(
        (m) =>
          new m.X402PaymentController({
            ...topUp,
            wallet,
            policy: payment,
            onPayment,
            brand: options.brand ?? DEFAULT_BRAND,
            baseUrl,
            solanaRpcUrl,
            store,
            context,
          }),
      ));
      ready.catch(() => {}); // surfaced on first use
      const layer = ready.then((c) => c.layer()(next));
      layer.catch(() => {}); // the same error, surfaced on first use: never an unhandled rejection meanwhile
      return async (input, init) => (await layer)(input, init);
    };
  }
  const baseUrl = normalizeBaseUrl(options.baseUrl);
  const brand = options.brand ?? DEFAULT_BRAND;
  const names = brandNames(brand);
  let self: ServiceFetch | undefined;
  const recordsByType = new Map<string, ReturnType<typeof modelRecordsFor>>();
  const stack = createTransport({
    ...transport,
    context,
    auth: options.auth ?? (wallet && x402 ? lazyWalletAuth(wallet, x402, signInDomain, context) : undefined),
    paymentLayer,
    spendLayer: spendLayer({
      budget,
      log: spendLog,
      origin: new URL(baseUrl).origin,
      brand,
      headers: names,
      // the process's one /models cache (the chat model's profiles read the same records)
      lookup: async (type, model, signal) => {
        let records = recordsByType.get(type);
        if (!records) recordsByType.set(type, (records = modelRecordsFor(self!, type)));
        // a trait or a compatibility name is priced as the model it resolves to
        return records.resolve(model, { signal: signal ?? undefined });
      },
    }),
    limitStore: sharedLimitStore(store),
    // a coalesced crypto RPC batch's cost is cut per item by the proxy's pricing
    concurrency: transport.concurrency === false ? false : { cryptoRpcItemCredits: itemCredits, ...transport.concurrency },
  }) as ServiceFetch;
  self = stack;
  Object.defineProperties(stack, {
    wallet: { value: wallet },
    paymentController: { value: () => controller ?? Promise.resolve(undefined) },
    budget: { value: budget },
  });
  return stack;
}
