/**
 * A store whose state lives in another process behind HTTP on loopback, as a Cloudflare Durable Object or an
 * HTTP Redis (Upstash) keeps it: written only against the documented interface (docs/store.md), to prove the
 * contract can hold a store that is not ours. Each method is one POST `/<method>` with `{ ns, args }` and
 * answers `{ value }` (200) or `{ error }` (500). `ns` keeps fleets (and contract cases) apart, as a Redis prefix.
 *
 * Fail closed, as the interface asks of a shared store: no answer within `timeoutMs`, a refused connection or
 * an error answer rejects with a StoreUnavailableError naming the method (never the URL's credentials).
 * JSON has no `undefined`: an absent argument travels as `null`, and the server maps it back (docs/store.md).
 */
import { StoreUnavailableError } from "../../src/http/errors.js";
import type {
  GuardGrant,
  GuardRelease,
  GuardRequest,
  LimitStore,
  PaceGrant,
  PaceObservation,
  PaceRequest,
  SlotGrant,
  SlotRequest,
} from "../../src/http/shared-limits.js";
import type {
  BudgetFigures,
  BudgetReserveRequest,
  BudgetStore,
  LeaseOutcome,
  PaymentStore,
  PendingPaymentRecord,
  SpendOutcome,
  SpendRequest,
  TopUpEnd,
  TopUpState,
} from "../../src/store/types.js";

export interface HttpStoreOptions {
  /** the store server, e.g. http://127.0.0.1:PORT */
  url: string;
  /** the fleet's namespace (its state is apart from every other namespace's) */
  namespace: string;
  /** a call with no answer within this fails closed (default 5000) */
  timeoutMs?: number;
}

export class HttpStore implements PaymentStore, BudgetStore, LimitStore {
  readonly #url: string;
  readonly #ns: string;
  readonly #timeoutMs: number;
  constructor(options: HttpStoreOptions) {
    this.#url = options.url.replace(/\/$/, "");
    this.#ns = options.namespace;
    this.#timeoutMs = options.timeoutMs ?? 5000;
  }

  async #call<T>(operation: string, args: unknown[]): Promise<T> {
    let answer: { value?: T; error?: string };
    try {
      const res = await fetch(`${this.#url}/${operation}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ns: this.#ns, args }),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      answer = (await res.json()) as typeof answer;
      if (!res.ok) throw new Error(answer.error ?? `status ${res.status}`);
    } catch (err) {
      const why = err instanceof Error ? `${err.name}: ${err.message}` : "failed";
      throw new StoreUnavailableError(`payment store (HTTP) ${operation}: ${why}`, { operation });
    }
    return answer.value as T;
  }

  toJSON(): Record<string, unknown> {
    return { store: "HttpStore", namespace: this.#ns };
  }

  // PaymentStore
  reserveSpend(request: SpendRequest): Promise<SpendOutcome> {
    return this.#call("reserveSpend", [request]);
  }
  releaseSpend(reservation: string): Promise<void> {
    return this.#call("releaseSpend", [reservation]);
  }
  commitSpend(reservation: string): Promise<void> {
    return this.#call("commitSpend", [reservation]);
  }
  spentUsd(scope: string, periodMs: number, now: number): Promise<number> {
    return this.#call("spentUsd", [scope, periodMs, now]);
  }
  pins(scope: string): Promise<Record<string, string>> {
    return this.#call("pins", [scope]);
  }
  // TopUpCoordinator
  acquireTopUpLease(wallet: string, ttlMs: number): Promise<LeaseOutcome> {
    return this.#call("acquireTopUpLease", [wallet, ttlMs]);
  }
  renewTopUpLease(wallet: string, token: number, ttlMs: number): Promise<boolean> {
    return this.#call("renewTopUpLease", [wallet, token, ttlMs]);
  }
  putPendingPayment(wallet: string, token: number, record: PendingPaymentRecord): Promise<boolean> {
    return this.#call("putPendingPayment", [wallet, token, record]);
  }
  endTopUp(wallet: string, token: number, end: TopUpEnd): Promise<TopUpState> {
    return this.#call("endTopUp", [wallet, token, end]);
  }
  topUpState(wallet: string): Promise<TopUpState> {
    return this.#call("topUpState", [wallet]);
  }
  // BudgetStore
  budgetReserve(key: string, request: BudgetReserveRequest): Promise<BudgetFigures & { ok: boolean }> {
    return this.#call("budgetReserve", [key, request]);
  }
  budgetSettle(key: string, reservation: string, actualNano: number | undefined, ttlMs: number): Promise<BudgetFigures> {
    return this.#call("budgetSettle", [key, reservation, actualNano ?? null, ttlMs]);
  }
  budgetFigures(key: string): Promise<BudgetFigures> {
    return this.#call("budgetFigures", [key]);
  }
  // LimitStore
  acquirePace(key: string, request: PaceRequest): Promise<PaceGrant> {
    return this.#call("acquirePace", [key, request]);
  }
  observePace(key: string, observation: PaceObservation): Promise<void> {
    return this.#call("observePace", [key, observation]);
  }
  acquireGuard(key: string, request: GuardRequest): Promise<GuardGrant> {
    return this.#call("acquireGuard", [key, request]);
  }
  releaseGuard(key: string, release: GuardRelease): Promise<void> {
    return this.#call("releaseGuard", [key, release]);
  }
  acquireSlot(key: string, request: SlotRequest): Promise<SlotGrant> {
    return this.#call("acquireSlot", [key, request]);
  }
  renewSlot(key: string, renewal: { now: number; id: string; leaseMs: number }): Promise<boolean> {
    return this.#call("renewSlot", [key, renewal]);
  }
  releaseSlot(key: string, id: string): Promise<void> {
    return this.#call("releaseSlot", [key, id]);
  }

  /** Nothing to close (no connection is kept); here so fleet members can treat it as a RedisStore. */
  async close(): Promise<void> {}
}
