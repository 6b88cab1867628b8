/**
 * `SpendBudget`: a cap on credit spent (inference, embeddings, media, web, crypto RPC), not on USDC leaving the
 * wallet (that is `PaymentPolicy`'s). Before each request the fetch stack reserves the request's worst-case cost;
 * a reservation that does not fit is a `BudgetExceededError` and nothing is sent. After the answer the reservation
 * is settled to the real cost (or released when nothing was charged).
 *
 * Figures are integers of nano-dollars (1e-9 USD), so `spentUsd` is an exact sum of settled costs. With a fleet
 * store (`store: RedisStore`), every process that builds a budget with the same `name` on that store shares it.
 */
import { BudgetExceededError, ConfigurationError } from "../http/errors.js";
import { defaultStore, type MemoryStore } from "../store/memory.js";
import type { MemoryBudgets } from "../store/memory-budgets.js";
import type { BudgetFigures, BudgetStore, PaymentStore } from "../store/types.js";

const NANO = 1e9;
/** how long a fleet budget's record is kept after its last use */
const BUDGET_TTL_MS = 30 * 24 * 60 * 60_000;

export const toNano = (usd: number): number => Math.round(usd * NANO);
export const fromNano = (nano: number): number => nano / NANO;

export interface SpendBudgetOptions {
  /** the cap, in USD, on what every request holding this budget may spend together */
  maxUsd: number;
  /** how errors, logs and a fleet store name it (default: a random id); fleet processes share a budget by name */
  name?: string;
  /**
   * where the figures live: this process (default), or a fleet store (`RedisStore`), where every process with a
   * budget of the same name shares them
   */
  store?: PaymentStore;
  /** per-call fees the service does not publish in `/models` (see `SpendFees`) */
  fees?: Partial<SpendFees>;
  /**
   * USD to reserve for a request the budget cannot price (a model missing from `/models`, an unknown route);
   * default: refuse it (`BudgetExceededError` with `estimateUsd: Infinity`)
   */
  unpricedUsd?: number;
}

/**
 * Per-call fees that are not in `/models` pricing. The defaults are upper bounds, not the service's figures:
 * set them to your deployment's prices for tighter reservations.
 */
export interface SpendFees {
  /** a chat request with `enable_web_search` on or auto (default $0.01) */
  webSearchUsd: number;
  /** each URL `enable_web_scraping` may scrape, up to 5 a request (default $0.01) */
  webScrapeUsdPerUrl: number;
  /** `POST /augment/search` (default $0.01) */
  augmentSearchUsd: number;
  /** `POST /augment/scrape` (default $0.01) */
  augmentScrapeUsd: number;
  /** USD per crypto RPC credit (default 7e-7, the published approximation) */
  rpcUsdPerCredit: number;
}

export const DEFAULT_FEES: Readonly<SpendFees> = Object.freeze({
  webSearchUsd: 0.01,
  webScrapeUsdPerUrl: 0.01,
  augmentSearchUsd: 0.01,
  augmentScrapeUsd: 0.01,
  rpcUsdPerCredit: 7e-7,
});

/** One request's hold on a budget: settle it to the real cost, or release it. Settling twice changes nothing. */
export interface BudgetReservation {
  readonly budget: SpendBudget;
  readonly reservedUsd: number;
  /** the real cost, USD (clamped at 0) */
  settle(actualUsd: number): Promise<void>;
  /** nothing was charged */
  release(): Promise<void>;
}

export class SpendBudget {
  readonly maxUsd: number;
  readonly name: string;
  readonly fees: Readonly<SpendFees>;
  readonly unpricedUsd?: number;
  readonly #store: BudgetStore;
  /** a store of this process answers synchronously: the figures are exact as soon as an answer ends */
  readonly #now?: MemoryBudgets;
  #key: string;
  readonly #limitNano: number;
  #figures: BudgetFigures = { spentNano: 0, reservedNano: 0 };

  constructor(options: SpendBudgetOptions) {
    if (!options || typeof options !== "object") throw new ConfigurationError("SpendBudget needs { maxUsd }");
    const { maxUsd, name, store, fees, unpricedUsd } = options;
    if (!(typeof maxUsd === "number" && Number.isFinite(maxUsd) && maxUsd >= 0)) {
      throw new ConfigurationError(`SpendBudget.maxUsd must be a non-negative number of USD (got ${String(maxUsd)})`);
    }
    if (name !== undefined && !(typeof name === "string" && /^[\w.:-]{1,128}$/.test(name))) {
      throw new ConfigurationError("SpendBudget.name must be 1-128 characters of letters, digits, _ . : -");
    }
    if (unpricedUsd !== undefined && !(Number.isFinite(unpricedUsd) && unpricedUsd >= 0)) {
      throw new ConfigurationError("SpendBudget.unpricedUsd must be a non-negative number of USD");
    }
    for (const [k, v] of Object.entries(fees ?? {})) {
      if (!(k in DEFAULT_FEES))
        throw new ConfigurationError(
          `SpendBudget.fees has an unknown fee ${JSON.stringify(k)} (one of ${Object.keys(DEFAULT_FEES).join(", ")})`,
        );
      if (!(typeof v === "number" && Number.isFinite(v) && v >= 0))
        throw new ConfigurationError(`SpendBudget.fees.${k} must be a non-negative number of USD`);
    }
    const s = store ?? defaultStore();
    if (typeof s.budgetReserve !== "function" || typeof s.budgetSettle !== "function" || typeof s.budgetFigures !== "function") {
      throw new ConfigurationError(
        "SpendBudget.store does not keep budgets (budgetReserve, budgetSettle, budgetFigures): use MemoryStore or RedisStore",
      );
    }
    this.maxUsd = maxUsd;
    this.name = name ?? `budget-${globalThis.crypto.randomUUID().slice(0, 8)}`;
    this.fees = Object.freeze({ ...DEFAULT_FEES, ...fees });
    this.unpricedUsd = unpricedUsd;
    this.#store = s as BudgetStore;
    this.#now = (s as Partial<MemoryStore>).budgetsNow;
    // a budget without a name is this object's own, even on a shared store
    this.#key = name ?? `${this.name}:${globalThis.crypto.randomUUID()}`;
    this.#limitNano = toNano(maxUsd);
  }

  /** USD settled so far: an exact sum of real costs (a fleet's: as of this process's last operation or `refresh()`) */
  get spentUsd(): number {
    return fromNano(this.#figures.spentNano);
  }
  /** USD held by requests still in flight (their worst cases) */
  get reservedUsd(): number {
    return fromNano(this.#figures.reservedNano);
  }
  /** `maxUsd - spentUsd`: what settled costs leave */
  get remainingUsd(): number {
    return fromNano(this.#limitNano - this.#figures.spentNano);
  }

  /** Reads the figures from the store (a fleet budget's, as every process left them). */
  async refresh(): Promise<{ spentUsd: number; reservedUsd: number; remainingUsd: number }> {
    this.#figures = this.#now ? this.#now.figures(this.#key) : await this.#store.budgetFigures(this.#key);
    return { spentUsd: this.spentUsd, reservedUsd: this.reservedUsd, remainingUsd: this.remainingUsd };
  }

  /**
   * Whether `estimateUsd` would fit now (the store's figures, read afresh), holding nothing: the same
   * `BudgetExceededError` as `reserve` when it would not. For a step that must not start unless the request that
   * follows can be paid for (a job's top-up before its queue).
   */
  async check(estimateUsd: number, what = "the request"): Promise<void> {
    await this.refresh();
    if (
      Number.isFinite(estimateUsd) &&
      estimateUsd >= 0 &&
      this.#figures.spentNano + this.#figures.reservedNano + Math.ceil(estimateUsd * NANO) <= this.#limitNano
    )
      return;
    throw this.#refusal(this.#figures, estimateUsd, what);
  }

  /**
   * Holds `estimateUsd` for one request, or refuses it (`BudgetExceededError`, nothing held). `what` names the
   * request in the error. An estimate of Infinity (a request that could not be priced) is refused.
   */
  #refusal(figures: BudgetFigures, estimateUsd: number, what: string): BudgetExceededError {
    const spentUsd = fromNano(figures.spentNano);
    const reservedUsd = fromNano(figures.reservedNano);
    const why = Number.isFinite(estimateUsd)
      ? `its worst case $${round(estimateUsd)} does not fit: $${round(spentUsd)} spent and $${round(reservedUsd)} reserved of $${this.maxUsd}`
      : "it cannot be priced (its model is not in /models, or its route has no known price; set unpricedUsd to allow it)";
    return new BudgetExceededError(`budget ${this.name} refused ${what}: ${why}; nothing was sent`, {
      budget: this.name,
      spentUsd,
      reservedUsd,
      limitUsd: this.maxUsd,
      estimateUsd,
    });
  }

  async reserve(estimateUsd: number, what = "the request"): Promise<BudgetReservation> {
    const refuse = (figures: BudgetFigures) => this.#refusal(figures, estimateUsd, what);
    if (!(estimateUsd >= 0) || !Number.isFinite(estimateUsd)) throw refuse(this.#figures);
    const amountNano = Math.max(0, Math.ceil(estimateUsd * NANO));
    const reservation = globalThis.crypto.randomUUID();
    const request = { limitNano: this.#limitNano, amountNano, reservation, ttlMs: BUDGET_TTL_MS };
    const outcome = this.#now ? this.#now.reserve(this.#key, request) : await this.#store.budgetReserve(this.#key, request);
    this.#figures = outcome;
    if (!outcome.ok) throw refuse(outcome);
    let done = false;
    const end = async (actualNano: number | undefined) => {
      if (done) return;
      done = true;
      this.#figures = this.#now
        ? this.#now.settle(this.#key, reservation, actualNano, BUDGET_TTL_MS)
        : await this.#store.budgetSettle(this.#key, reservation, actualNano, BUDGET_TTL_MS);
    };
    return {
      budget: this,
      reservedUsd: fromNano(amountNano),
      settle: (actualUsd) => end(Math.max(0, toNano(actualUsd))),
      release: () => end(undefined),
    };
  }

  /**
   * The same budget (its figures, its store, its name) under another cap: what a person raises a run's limit to.
   * The cap is each process's own (a fleet store keeps the figures, not the limit).
   */
  withLimit(maxUsd: number): SpendBudget {
    const next = new SpendBudget({
      maxUsd,
      name: this.name,
      store: this.#store as PaymentStore,
      fees: this.fees,
      unpricedUsd: this.unpricedUsd,
    });
    next.#key = this.#key;
    next.#figures = this.#figures;
    return next;
  }

  toJSON() {
    return {
      name: this.name,
      maxUsd: this.maxUsd,
      spentUsd: this.spentUsd,
      reservedUsd: this.reservedUsd,
      remainingUsd: this.remainingUsd,
    };
  }
}

/** USD as people read it: cents for dollars, three significant digits for fractions of a cent */
const round = (usd: number) => (usd >= 0.01 ? +usd.toFixed(6) : +usd.toPrecision(3));
