/**
 * The owner's money rules for automatic top-ups. Everything here runs before anything is signed: a payment
 * the policy does not allow is a `PaymentPolicyError` naming the rule, and nothing leaves the process.
 *
 * Rules, in the order they are checked for each offered requirement:
 *   scheme -> network -> wallet -> asset -> payee -> amount -> validity -> maxPerTopUp,
 * then, in one atomic step of the store: payee pins -> maxPerPeriod -> dryRun -> reserve and pin.
 *
 * Caps belong to the wallet, not to an object: every payment draws on the budget of the paying wallet's address
 * (whatever stack or policy object pays it) AND on the budget of this policy object (so one policy shared by
 * several wallets stays one budget). Both live in a store (`MemoryStore` per process by default).
 */
import { z } from "zod";
import { ConfigurationError, PaymentPolicyError } from "../http/errors.js";
import { atomicToUsd, usdToAtomic } from "./encoding.js";
import { BASE_MAINNET, SOLANA_MAINNET } from "./networks.js";
import { defaultStore } from "../store/memory.js";
import type { PaymentStore, SpendScope } from "../store/types.js";

/** Circle's USDC on Base and on Solana mainnet: the only assets allowed unless the owner lists others. */
export const USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
export const USDC_SOLANA = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
export const MIN_TOP_UP_USD = 5;

export type PolicyRule =
  | "scheme"
  | "network"
  | "wallet"
  | "asset"
  | "payee"
  | "amount"
  | "validity"
  | "maxPerTopUp"
  | "maxPerPeriod"
  | "dryRun"
  | "approval"
  | "noRequirements";

export interface AllowedAsset {
  /** CAIP-2 network (or `base` / `solana`); any allowed network when absent */
  network?: string;
  /** token contract (EVM) or mint (Solana) */
  asset: string;
  /** default 6 (USDC) */
  decimals?: number;
}

export interface PaymentPolicyOptions {
  /**
   * USD per top-up (default: exactly what the service's top-up endpoint offers, its $5 minimum). A larger amount
   * is paid on Base in the legacy x402 v1 form the service's own wallet SDK uses (any amount from $5 to $10,000, in
   * one payment); on Solana, where only the offered requirement can be signed, it is refused before signing.
   */
  amountUsd?: number;
  /** ceiling of one top-up in USD (default 20, or the period cap when lower) */
  maxPerTopUpUsd?: number;
  /** ceiling of all top-ups within `periodMs` (default 100, or the per-top-up cap when higher) */
  maxPerPeriodUsd?: number;
  /** rolling period in ms (default 24 h) */
  periodMs?: number;
  /** CAIP-2 ids or `base` / `solana` (default Base and Solana mainnet) */
  allowedNetworks?: string[];
  /** assets allowed (default real USDC on Base and Solana; the emulator's test USDC lives at those addresses) */
  allowedAssets?: (string | AllowedAsset)[];
  /**
   * payees allowed. When absent, the first payee this policy pays on a network is pinned (trust on first
   * use): a later 402 naming another payee on that network is refused (rule `payee`) instead of paid.
   */
  allowedPayees?: string[];
  /** with no `allowedPayees`: pin the first payee per network (default true); false allows any payee */
  pinPayees?: boolean;
  /** rail to prefer when several are allowed */
  preferredNetwork?: string;
  /**
   * the longest a signed payment may stay valid, in seconds (default 3600). The service's `maxTimeoutSeconds`
   * is clamped to it (the signature expires sooner than offered); an offer of zero or less is refused.
   */
  maxValiditySeconds?: number;
  /** decide and report, never sign */
  dryRun?: boolean;
  /**
   * Deny by default: only what is listed is paid. `allowedPayees` and `allowedAssets` (each naming its network)
   * are required, and nothing is pinned on first use; the networks are the assets' networks unless listed.
   */
  strict?: boolean;
  /**
   * Asked before every signature (automatic and explicit top-ups alike), after every other rule passed and the
   * budget is reserved: true signs; false, a throw, or no answer within `approvalTimeoutMs` is a
   * `PaymentPolicyError` with rule `approval`, and nothing is signed. Concurrent 402s of a wallet share one top-up,
   * so they ask once. A LangGraph `interrupt()` thrown from here passes through unchanged (the run pauses at the
   * payment and asks again, nothing signed, when it resumes).
   */
  approve?: (request: PaymentApprovalRequest) => boolean | Promise<boolean>;
  /** how long `approve` may take, in ms (default 5 minutes) */
  approvalTimeoutMs?: number;
  /** ms clock (tests) */
  now?: () => number;
}

/** What `PaymentPolicy.approve` is asked to allow: one payment, exactly as it would be signed. */
export interface PaymentApprovalRequest {
  /** USD to be paid (what is signed) */
  amountUsd: number;
  /** the least the service asked for */
  minimumUsd: number;
  /** CAIP-2 network */
  network: string;
  /** token contract (EVM) or mint (Solana) */
  asset: string;
  payTo: string;
  /** the paying wallet's address */
  wallet: string;
  /** why: "a 402 answered …" (an automatic top-up) or "an explicit top-up" */
  reason: string;
}

/** One entry of an x402 `accepts` array, v2 or v1 shape. */
const RequirementSchema = z
  .object({
    scheme: z.string(),
    network: z.string(),
    amount: z.string().optional(),
    maxAmountRequired: z.string().optional(),
    asset: z.string(),
    payTo: z.string(),
    maxTimeoutSeconds: z.number().optional(),
    extra: z.record(z.string(), z.unknown()).optional(),
  })
  .passthrough();

export interface PaymentRequirement {
  scheme: "exact";
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: Record<string, unknown>;
}

export interface PaymentDecision {
  /** the requirement to sign: `amount` is what will be paid, the validity clamped to `maxValiditySeconds` */
  requirement: PaymentRequirement;
  /**
   * "v2": exactly the offered requirement (`accepted` is the offer, unchanged), in `PAYMENT-SIGNATURE`.
   * "v1": an owner-chosen amount above the offer, in the legacy v1 form (`maxAmountRequired`) in `X-402-Payment`.
   */
  form: "v2" | "v1";
  /** the requirement exactly as the service offered it */
  offered: Record<string, unknown>;
  amountUsd: number;
  amountAtomic: bigint;
  /** the minimum the service asked for */
  minimumUsd: number;
  decimals: number;
  network: string;
  asset: string;
  payTo: string;
}

const NETWORK_ALIASES: Record<string, string> = {
  base: BASE_MAINNET,
  "base-mainnet": BASE_MAINNET,
  solana: SOLANA_MAINNET,
  "solana-mainnet": SOLANA_MAINNET,
};

export function normalizeNetwork(network: string): string {
  return NETWORK_ALIASES[network.toLowerCase()] ?? network;
}

function sameAddress(network: string, a: string, b: string): boolean {
  return network.startsWith("eip155:") ? a.toLowerCase() === b.toLowerCase() : a === b;
}

/** An address as pins compare it: EVM addresses are case-insensitive. */
export function normalizeAddress(network: string, address: string): string {
  return network.startsWith("eip155:") ? address.toLowerCase() : address;
}

/** The store key of a wallet address's budget and pins (one per address, whatever object holds the key). */
export function walletScopeKey(namespace: string, address: string): string {
  return `wallet:${namespace}:${namespace === "eip155" ? address.toLowerCase() : address}`;
}

const RULE_ORDER: PolicyRule[] = ["noRequirements", "scheme", "network", "wallet", "asset", "payee", "amount", "validity", "maxPerTopUp"];

export interface DecideContext {
  namespace: "eip155" | "solana";
  /** an explicit top-up's amount, instead of the policy's */
  amountUsd?: number;
}

/** A payment the store has reserved budget for; release it when nothing was signed, commit it once signed. */
export interface Authorization {
  decision: PaymentDecision;
  release(): Promise<void>;
  commit(): Promise<void>;
}

let policyIds = 0;
/** this process among others sharing a store (not process.pid: browsers and workers have no process) */
const PROCESS_TAG = globalThis.crypto.randomUUID().slice(0, 8);

export class PaymentPolicy {
  readonly amountUsd?: number;
  readonly maxPerTopUpUsd: number;
  readonly maxPerPeriodUsd: number;
  readonly periodMs: number;
  readonly allowedNetworks: string[];
  readonly allowedAssets: Required<AllowedAsset>[] | { network?: string; asset: string; decimals: number }[];
  readonly allowedPayees?: string[];
  readonly preferredNetwork?: string;
  readonly dryRun: boolean;
  readonly pinPayees: boolean;
  readonly maxValiditySeconds: number;
  readonly strict: boolean;
  readonly approve?: (request: PaymentApprovalRequest) => boolean | Promise<boolean>;
  readonly approvalTimeoutMs: number;
  /** this object's own budget and pins in the store */
  readonly scopeKey = `policy:${PROCESS_TAG}.${++policyIds}.${Math.random().toString(36).slice(2, 8)}`;
  readonly #now: () => number;

  constructor(options: PaymentPolicyOptions = {}) {
    const positive = (name: string, v: number | undefined) => {
      if (v !== undefined && !(Number.isFinite(v) && v > 0))
        throw new ConfigurationError(`PaymentPolicy.${name} must be a positive number`);
    };
    positive("amountUsd", options.amountUsd);
    positive("maxPerTopUpUsd", options.maxPerTopUpUsd);
    positive("maxPerPeriodUsd", options.maxPerPeriodUsd);
    positive("periodMs", options.periodMs);
    positive("maxValiditySeconds", options.maxValiditySeconds);
    this.maxValiditySeconds = options.maxValiditySeconds ?? 3600;
    this.maxPerPeriodUsd = options.maxPerPeriodUsd ?? Math.max(100, options.maxPerTopUpUsd ?? 0);
    this.maxPerTopUpUsd = options.maxPerTopUpUsd ?? Math.min(20, this.maxPerPeriodUsd);
    this.periodMs = options.periodMs ?? 24 * 60 * 60_000;
    if (options.amountUsd !== undefined && options.amountUsd > this.maxPerTopUpUsd) {
      throw new ConfigurationError(`PaymentPolicy.amountUsd (${options.amountUsd}) exceeds maxPerTopUpUsd (${this.maxPerTopUpUsd})`);
    }
    if (this.maxPerTopUpUsd > this.maxPerPeriodUsd) {
      throw new ConfigurationError(
        `PaymentPolicy.maxPerTopUpUsd (${this.maxPerTopUpUsd}) exceeds maxPerPeriodUsd (${this.maxPerPeriodUsd})`,
      );
    }
    this.amountUsd = options.amountUsd;
    positive("approvalTimeoutMs", options.approvalTimeoutMs);
    if (options.approve !== undefined && typeof options.approve !== "function")
      throw new ConfigurationError("PaymentPolicy.approve must be a function");
    this.approve = options.approve;
    this.approvalTimeoutMs = options.approvalTimeoutMs ?? 5 * 60_000;
    this.strict = options.strict === true;
    if (this.strict) {
      // deny by default: no built-in lists stand in for the owner's
      if (!options.allowedPayees?.length)
        throw new ConfigurationError("PaymentPolicy.strict needs allowedPayees: with none listed, nothing could be paid");
      if (!options.allowedAssets?.length)
        throw new ConfigurationError("PaymentPolicy.strict needs allowedAssets: with none listed, nothing could be paid");
      for (const a of options.allowedAssets) {
        if (typeof a === "string" || !a.network)
          throw new ConfigurationError("PaymentPolicy.strict: every allowedAssets entry names its network ({ network, asset })");
      }
    }
    const strictNetworks =
      this.strict && !options.allowedNetworks ? [...new Set(options.allowedAssets!.map((a) => (a as AllowedAsset).network!))] : undefined;
    this.allowedNetworks = (options.allowedNetworks ?? strictNetworks ?? [BASE_MAINNET, SOLANA_MAINNET]).map(normalizeNetwork);
    if (this.allowedNetworks.length === 0) throw new ConfigurationError("PaymentPolicy.allowedNetworks is empty: nothing could be paid");
    const assets = options.allowedAssets ?? [
      { network: BASE_MAINNET, asset: USDC_BASE },
      { network: SOLANA_MAINNET, asset: USDC_SOLANA },
    ];
    this.allowedAssets = assets.map((a) => {
      const entry = typeof a === "string" ? { asset: a } : a;
      if (!entry.asset) throw new ConfigurationError("PaymentPolicy.allowedAssets: every entry needs an asset address");
      const decimals = entry.decimals ?? 6;
      if (!Number.isInteger(decimals) || decimals < 0 || decimals > 36)
        throw new ConfigurationError("PaymentPolicy.allowedAssets: bad decimals");
      return { network: entry.network ? normalizeNetwork(entry.network) : undefined, asset: entry.asset, decimals };
    });
    this.allowedPayees = options.allowedPayees;
    this.preferredNetwork = options.preferredNetwork ? normalizeNetwork(options.preferredNetwork) : undefined;
    this.dryRun = options.dryRun ?? false;
    // a strict policy pays only listed payees: nothing to pin
    this.pinPayees = this.strict ? false : (options.pinPayees ?? true);
    this.#now = options.now ?? Date.now;
  }

  static from(value: PaymentPolicy | PaymentPolicyOptions | undefined): PaymentPolicy {
    return value instanceof PaymentPolicy ? value : new PaymentPolicy(value ?? {});
  }

  /**
   * USD of top-ups counted in the current rolling period: this policy object's, or, given a wallet address,
   * that wallet's (all stacks and policies paying from it).
   */
  async spentUsd(wallet?: { address: string; namespace?: "eip155" | "solana" }, store: PaymentStore = defaultStore()): Promise<number> {
    const key = wallet
      ? walletScopeKey(wallet.namespace ?? (wallet.address.startsWith("0x") ? "eip155" : "solana"), wallet.address)
      : this.scopeKey;
    return store.spentUsd(key, this.periodMs, this.#now());
  }

  /**
   * The requirement to pay and the amount, or a `PaymentPolicyError` naming the rule that stopped the best
   * candidate. Pure: nothing is recorded, and payee pins and the period cap (which live in the store) are
   * checked by `authorize`.
   */
  decide(accepts: readonly unknown[], context: DecideContext): PaymentDecision {
    return this.candidates(accepts, context)[0]!;
  }

  /**
   * Decides and reserves in one atomic step of the store: payee pins, the period caps of the wallet and of this
   * policy, then the spend is recorded and the payee pinned. Nothing is awaited between the decision and the
   * reservation, so two concurrent first top-ups naming different payees cannot both pass.
   */
  async authorize(
    accepts: readonly unknown[],
    context: DecideContext & { walletAddress: string; store?: PaymentStore },
  ): Promise<Authorization> {
    const store = context.store ?? defaultStore();
    const candidates = this.candidates(accepts, context);
    const pin = !this.allowedPayees && this.pinPayees;
    const scopes: SpendScope[] = [
      { key: walletScopeKey(context.namespace, context.walletAddress), capUsd: this.maxPerPeriodUsd, periodMs: this.periodMs, pin },
      { key: this.scopeKey, capUsd: this.maxPerPeriodUsd, periodMs: this.periodMs, pin },
    ];
    const outcome = await store.reserveSpend({
      scopes,
      candidates: candidates.map((c) => ({ network: c.network, payTo: normalizeAddress(c.network, c.payTo), amountUsd: c.amountUsd })),
      now: this.#now(),
      dryRun: this.dryRun,
    });
    if (!outcome.ok) {
      const decision = outcome.index === undefined ? undefined : candidates[outcome.index];
      const message =
        outcome.rule === "dryRun"
          ? `dry run: ${outcome.detail} (asset ${decision?.asset})`
          : `payment refused by policy (${outcome.rule}): ${outcome.detail}`;
      throw new PaymentPolicyError(message, { rule: outcome.rule });
    }
    const decision = candidates[outcome.index]!;
    return {
      decision,
      release: () => store.releaseSpend(outcome.reservation),
      commit: () => store.commitSpend(outcome.reservation),
    };
  }

  /**
   * Whether the period caps could still fit a payment for these (earlier) requirements, reserving nothing: a
   * `PaymentPolicyError` (rule `maxPerPeriod`) when no allowed candidate fits. Lets a top-up be refused before
   * asking the service for requirements: each such ask is a 402, and the service blocks a caller after 20
   * failures in 30 s, so a fleet at its cap would otherwise block itself.
   */
  async checkBudget(accepts: readonly unknown[], context: DecideContext & { walletAddress: string; store?: PaymentStore }): Promise<void> {
    let candidates: PaymentDecision[];
    try {
      candidates = this.candidates(accepts, context);
    } catch {
      return; // the earlier requirements no longer pass the policy: the fresh ones decide
    }
    const store = context.store ?? defaultStore();
    const pin = !this.allowedPayees && this.pinPayees;
    const outcome = await store.reserveSpend({
      scopes: [
        { key: walletScopeKey(context.namespace, context.walletAddress), capUsd: this.maxPerPeriodUsd, periodMs: this.periodMs, pin },
        { key: this.scopeKey, capUsd: this.maxPerPeriodUsd, periodMs: this.periodMs, pin },
      ],
      candidates: candidates.map((c) => ({ network: c.network, payTo: normalizeAddress(c.network, c.payTo), amountUsd: c.amountUsd })),
      now: this.#now(),
      dryRun: true,
    });
    if (!outcome.ok && outcome.rule === "maxPerPeriod") {
      throw new PaymentPolicyError(`payment refused by policy (maxPerPeriod): ${outcome.detail}`, { rule: "maxPerPeriod" });
    }
  }

  /**
   * Whether an explicit top-up of `amountUsd` could still fit the period caps (the wallet's and this policy's),
   * reading only what the store recorded: a `PaymentPolicyError` (rule `maxPerPeriod`) when it cannot. Needs no
   * requirements, so a fleet at its cap is refused before any ask reaches `/x402/top-up` (10 a minute per IP:
   * the asks of refused top-ups would otherwise hold the ones that can still be paid for a minute).
   */
  async checkAmountFits(amountUsd: number, context: { namespace: string; walletAddress: string; store?: PaymentStore }): Promise<void> {
    const store = context.store ?? defaultStore();
    const now = this.#now();
    for (const [key, scope] of [
      [walletScopeKey(context.namespace, context.walletAddress), "wallet"],
      [this.scopeKey, "policy"],
    ] as const) {
      const spent = await store.spentUsd(key, this.periodMs, now);
      if (spent + amountUsd > this.maxPerPeriodUsd + 1e-9) {
        throw new PaymentPolicyError(
          `payment refused by policy (maxPerPeriod): $${amountUsd} would bring top-ups to $${+(spent + amountUsd).toFixed(6)} within the period, over the $${this.maxPerPeriodUsd} cap (${scope})`,
          { rule: "maxPerPeriod" },
        );
      }
    }
  }

  /** Every offered requirement the policy allows, best first (the preferred network leads). */
  candidates(accepts: readonly unknown[], context: DecideContext): PaymentDecision[] {
    let worst: { rule: PolicyRule; detail: string } = { rule: "noRequirements", detail: "the service offered no payment requirements" };
    const candidates: PaymentDecision[] = [];
    const note = (rule: PolicyRule, detail: string) => {
      if (RULE_ORDER.indexOf(rule) >= RULE_ORDER.indexOf(worst.rule)) worst = { rule, detail };
    };
    for (const raw of accepts) {
      const parsed = RequirementSchema.safeParse(raw);
      if (!parsed.success) {
        note("scheme", "a payment requirement is malformed");
        continue;
      }
      const r = parsed.data;
      const network = normalizeNetwork(r.network);
      if (r.scheme !== "exact") {
        note("scheme", `scheme ${JSON.stringify(r.scheme)} is not supported (only "exact")`);
        continue;
      }
      if (!this.allowedNetworks.includes(network)) {
        note("network", `network ${network} is not allowed (allowed: ${this.allowedNetworks.join(", ")})`);
        continue;
      }
      if (!network.startsWith(`${context.namespace}:`)) {
        note("wallet", `this wallet cannot pay on ${network}`);
        continue;
      }
      const asset = this.allowedAssets.find((a) => (!a.network || a.network === network) && sameAddress(network, a.asset, r.asset));
      if (!asset) {
        note("asset", `asset ${r.asset} on ${network} is not an allowed asset`);
        continue;
      }
      if (this.allowedPayees && !this.allowedPayees.some((p) => sameAddress(network, p, r.payTo))) {
        note("payee", `payee ${r.payTo} is not an allowed payee`);
        continue;
      }
      const minimumText = r.amount ?? r.maxAmountRequired;
      if (!minimumText || !/^[0-9]{1,40}$/.test(minimumText) || BigInt(minimumText) === 0n) {
        note("amount", `amount ${JSON.stringify(minimumText)} is not a positive integer of atomic units`);
        continue;
      }
      const offeredValidity = r.maxTimeoutSeconds ?? 300;
      if (!Number.isFinite(offeredValidity) || offeredValidity <= 0) {
        note("validity", `maxTimeoutSeconds ${JSON.stringify(r.maxTimeoutSeconds)} is not a positive number of seconds`);
        continue;
      }
      const minimumAtomic = BigInt(minimumText);
      const minimumUsd = atomicToUsd(minimumAtomic, asset.decimals);
      if (minimumUsd > this.maxPerTopUpUsd) {
        note("maxPerTopUp", `the service asks for at least $${minimumUsd}, over the $${this.maxPerTopUpUsd} cap per top-up`);
        continue;
      }
      // The owner's amount, else exactly the offer; never under the offer. A service's "suggested" top-up is not
      // the owner's choice: it never raises what is paid.
      const wanted = context.amountUsd ?? this.amountUsd;
      let amountAtomic = wanted === undefined ? minimumAtomic : usdToAtomic(wanted, asset.decimals);
      if (amountAtomic < minimumAtomic) amountAtomic = minimumAtomic;
      const amountUsd = atomicToUsd(amountAtomic, asset.decimals);
      if (amountUsd > this.maxPerTopUpUsd) {
        note("maxPerTopUp", `$${amountUsd} is over the $${this.maxPerTopUpUsd} cap per top-up`);
        continue;
      }
      // x402 v2 signs exactly the offered requirement (a strict server refuses any other `accepted`). A larger
      // amount goes in the legacy v1 form, as the service's own SDK sends it: one payment rather than several
      // minimum ones (each a signature, a settlement and a round trip). v1 exists for EVM only here.
      const form = amountAtomic === minimumAtomic ? "v2" : "v1";
      if (form === "v1" && !network.startsWith("eip155:")) {
        note(
          "amount",
          `$${amountUsd} is more than the $${minimumUsd} the service offers on ${network}, where only the offered amount can be paid`,
        );
        continue;
      }
      candidates.push({
        requirement: {
          scheme: "exact",
          network,
          amount: amountAtomic.toString(),
          asset: r.asset,
          payTo: r.payTo,
          // the service does not choose how long a signature lives: at most maxValiditySeconds
          maxTimeoutSeconds: Math.min(Math.floor(offeredValidity) || 1, this.maxValiditySeconds),
          extra: r.extra ?? {},
        },
        form,
        offered: raw as Record<string, unknown>,
        amountUsd,
        amountAtomic,
        minimumUsd,
        decimals: asset.decimals,
        network,
        asset: r.asset,
        payTo: r.payTo,
      });
    }
    if (candidates.length === 0)
      throw new PaymentPolicyError(`payment refused by policy (${worst.rule}): ${worst.detail}`, { rule: worst.rule });
    if (this.preferredNetwork) {
      const rank = (c: PaymentDecision) => (c.network === this.preferredNetwork ? 0 : 1);
      candidates.sort((a, b) => rank(a) - rank(b));
    }
    return candidates;
  }

  /**
   * Asks the owner's `approve` about a payment about to be signed (nothing to ask without one). Refusal, a throw
   * or no answer in time is a `PaymentPolicyError` (rule `approval`); a LangGraph interrupt (an error marked
   * `is_bubble_up`) is rethrown as it is, so the graph pauses at the payment.
   */
  async approval(decision: PaymentDecision, context: { wallet: string; reason: string }): Promise<void> {
    const approve = this.approve;
    if (!approve) return;
    const request: PaymentApprovalRequest = {
      amountUsd: decision.amountUsd,
      minimumUsd: decision.minimumUsd,
      network: decision.network,
      asset: decision.asset,
      payTo: decision.payTo,
      wallet: context.wallet,
      reason: context.reason,
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    let answer: unknown;
    try {
      answer = await Promise.race([
        Promise.resolve().then(() => approve(Object.freeze(request))),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new ApprovalTimeout()), this.approvalTimeoutMs);
          timer.unref?.();
        }),
      ]);
    } catch (err) {
      if ((err as { is_bubble_up?: unknown } | undefined)?.is_bubble_up === true) throw err;
      const why =
        err instanceof ApprovalTimeout
          ? `no answer within ${this.approvalTimeoutMs} ms`
          : `approve threw: ${String((err as Error)?.message ?? err)}`;
      throw new PaymentPolicyError(
        `payment refused by policy (approval): ${why}; nothing was signed ($${decision.amountUsd} to ${decision.payTo} on ${decision.network})`,
        {
          rule: "approval",
        },
      );
    } finally {
      clearTimeout(timer);
    }
    if (answer !== true) {
      throw new PaymentPolicyError(
        `payment refused by policy (approval): not approved; nothing was signed ($${decision.amountUsd} to ${decision.payTo} on ${decision.network})`,
        {
          rule: "approval",
        },
      );
    }
  }

  toJSON() {
    return {
      amountUsd: this.amountUsd,
      maxPerTopUpUsd: this.maxPerTopUpUsd,
      maxPerPeriodUsd: this.maxPerPeriodUsd,
      periodMs: this.periodMs,
      allowedNetworks: this.allowedNetworks,
      allowedAssets: this.allowedAssets,
      allowedPayees: this.allowedPayees,
      maxValiditySeconds: this.maxValiditySeconds,
      preferredNetwork: this.preferredNetwork,
      dryRun: this.dryRun,
      strict: this.strict,
      approve: this.approve ? "[function]" : undefined,
      approvalTimeoutMs: this.approve ? this.approvalTimeoutMs : undefined,
    };
  }
}

class ApprovalTimeout extends Error {}
