/**
 * The emulator's honest ledger: accounts (API keys and wallets) with USD and staking-token (DIEM) balances,
 * and every top-up, charge and refund as an entry. Charges take DIEM first, then USD (the service bills the staking
 * token's daily credit before USD credit). One request may write several CHARGE rows with the same `requestId`
 * (the model and add-ons such as web search, told apart by `modelId`), as the live ledger does; a REFUND row
 * returns all of a failed request's charges at once.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";

/**
 * The request ids a route charges under, collected while its handler runs: the server answers with the first as
 * `x-request-id`, so a client can match what it was charged to the ledger's rows (a completion's `id` does that
 * for chat).
 */
export const chargedRequestIds = new AsyncLocalStorage<string[]>();

export const DEFAULT_KEY_USD = 100;
export const DEFAULT_KEY_DIEM = 10;

export interface ChargeResult {
  entry: LedgerEntry;
  /** portions charged, for the response's `cost` */
  usd: number;
  diem: number;
}

function round6(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}

/**
 * The account an EVM wallet is linked to, with staking-token (DIEM) credit left this epoch. While it has DIEM the
 * wallet's requests are billed to it, not to the wallet's credit, and its charges are not in the wallet's ledger.
 */
export interface LinkedAccount {
  /** DIEM left this epoch, in USD */
  diemUsd: number;
  /** its charges (never in the wallet's own entries) */
  entries: LedgerEntry[];
}

export class Ledger {
  readonly accounts = new Map<string, Account>();
  /** wallet account id -> the account it is linked to */
  readonly linked = new Map<string, LinkedAccount>();

  /** Links an EVM wallet to an account with `diemUsd` of staking-token credit this epoch (again: sets it anew). */
  linkWallet(address: string, { diemUsd }: { diemUsd: number }): LinkedAccount {
    if (!/^0x[0-9a-fA-F]{40}$/.test(address)) throw new Error("only EVM wallets can be linked to an account");
    if (!(Number.isFinite(diemUsd) && diemUsd >= 0)) throw new Error("diemUsd must be a finite number >= 0");
    const id = address.toLowerCase(); // the wallet account's id (created at its first sign-in, if not yet)
    const linked = this.linked.get(id) ?? { diemUsd: 0, entries: [] };
    linked.diemUsd = round6(diemUsd);
    this.linked.set(id, linked);
    return linked;
  }

  /** The account a wallet is linked to, if any. */
  linkedAccount(account: Account): LinkedAccount | undefined {
    return account.kind === "wallet" ? this.linked.get(account.id) : undefined;
  }

  addApiKey(option: string | ApiKeyOption): Account {
    const o = typeof option === "string" ? { key: option } : option;
    const account: Account = {
      id: o.key,
      kind: "apiKey",
      usd: o.usd ?? DEFAULT_KEY_USD,
      diem: o.diem ?? DEFAULT_KEY_DIEM,
      pro: o.pro ?? false,
      partner: o.partner ?? false,
      admin: o.admin ?? true,
      entries: [],
    };
    this.accounts.set(`key:${o.key}`, account);
    return account;
  }

  apiKey(key: string): Account | undefined {
    return this.accounts.get(`key:${key}`);
  }

  /** A wallet's account, created at first sight with `startingUsd`. EVM addresses are case-insensitive. */
  wallet(address: string, startingUsd = 0): Account {
    const id = address.startsWith("0x") ? address.toLowerCase() : address;
    let account = this.accounts.get(`wallet:${id}`);
    if (!account) {
      account = { id, kind: "wallet", usd: startingUsd, diem: 0, pro: false, partner: false, entries: [] };
      this.accounts.set(`wallet:${id}`, account);
    }
    return account;
  }

  /** Total available in USD-equivalent (DIEM counts 1:1 as daily credit). */
  available(account: Account): number {
    return round6(account.usd + account.diem);
  }

  /**
   * Charges `amountUsd`: DIEM first, then USD. Never drives USD below zero: a charge larger than what is
   * left takes what is left (the request was already served). Returns the portions taken.
   */
  charge(account: Account, amountUsd: number, meta: Partial<LedgerEntry> = {}): ChargeResult {
    if (meta.requestId) chargedRequestIds.getStore()?.push(meta.requestId);
    const amount = round6(Math.max(0, amountUsd));
    const linked = this.linkedAccount(account);
    if (linked && linked.diemUsd > 0) {
      // billed to the linked account while it has DIEM (what is left, at most): not a row of the wallet's ledger
      const diem = round6(Math.min(linked.diemUsd, amount));
      linked.diemUsd = round6(linked.diemUsd - diem);
      const entry: LedgerEntry = {
        id: randomUUID(),
        type: "CHARGE",
        amount: -diem,
        diem,
        balanceAfter: linked.diemUsd,
        createdAt: new Date().toISOString(),
        ...meta,
      };
      linked.entries.push(entry);
      return { entry, usd: 0, diem };
    }
    const diem = round6(Math.min(account.diem, amount));
    const usd = round6(Math.min(account.usd, amount - diem));
    account.diem = round6(account.diem - diem);
    account.usd = round6(account.usd - usd);
    const entry: LedgerEntry = {
      id: randomUUID(),
      type: "CHARGE",
      amount: -round6(usd + diem),
      diem,
      balanceAfter: account.usd,
      createdAt: new Date().toISOString(),
      ...meta,
    };
    account.entries.push(entry);
    return { entry, usd, diem };
  }

  topUp(account: Account, amountUsd: number, meta: Partial<LedgerEntry> = {}): LedgerEntry {
    account.usd = round6(account.usd + amountUsd);
    const entry: LedgerEntry = {
      id: randomUUID(),
      type: "TOP_UP",
      amount: round6(amountUsd),
      balanceAfter: account.usd,
      createdAt: new Date().toISOString(),
      ...meta,
    };
    account.entries.push(entry);
    return entry;
  }

  /**
   * Returns the CHARGE rows of `requestId` not yet refunded, in one REFUND row (`modelId` the charged model
   * when there was one charge, none when several), each portion to the balance it came from (DIEM, USD).
   * Undefined when nothing was charged under that id.
   */
  refund(account: Account, requestId: string, meta: Partial<LedgerEntry> = {}): LedgerEntry | undefined {
    const rows = account.entries.filter((e) => e.requestId === requestId);
    if (rows.some((e) => e.type === "REFUND")) return undefined;
    const charges = rows.filter((e) => e.type === "CHARGE");
    if (charges.length === 0) return undefined;
    let usd = 0;
    let diem = 0;
    for (const c of charges) {
      diem += c.diem ?? 0;
      usd += -c.amount - (c.diem ?? 0);
    }
    account.usd = round6(account.usd + usd);
    account.diem = round6(account.diem + diem);
    const entry: LedgerEntry = {
      id: randomUUID(),
      type: "REFUND",
      amount: round6(usd + diem),
      diem: round6(diem),
      balanceAfter: account.usd,
      createdAt: new Date().toISOString(),
      requestId,
      ...(charges.length === 1 && charges[0]!.modelId !== undefined ? { modelId: charges[0]!.modelId } : {}),
      ...(charges[0]!.kind !== undefined ? { kind: charges[0]!.kind } : {}),
      ...meta,
    };
    account.entries.push(entry);
    return entry;
  }

  /**
   * Sums for honest-ledger assertions: credited top-ups, charges (CHARGE rows, gross) and refunds. `charged -
   * refunded` is what the account really paid.
   */
  totals(account: Account): { toppedUp: number; charged: number; topUps: number; charges: number; refunded: number; refunds: number } {
    let toppedUp = 0;
    let charged = 0;
    let refunded = 0;
    let topUps = 0;
    let charges = 0;
    let refunds = 0;
    for (const e of account.entries) {
      if (e.type === "TOP_UP") (toppedUp += e.amount), topUps++;
      else if (e.type === "CHARGE") (charged -= e.amount), charges++;
      else if (e.type === "REFUND") (refunded += e.amount), refunds++;
    }
    return { toppedUp: round6(toppedUp), charged: round6(charged), topUps, charges, refunded: round6(refunded), refunds };
  }
}

export interface LedgerEntry {
  id: string;
  type: "TOP_UP" | "CHARGE" | "REFUND";
  /** USD amount (positive for TOP_UP, negative for CHARGE) */
  amount: number;
  /** staking-token portion charged (CHARGE only) */
  diem?: number;
  balanceAfter: number;
  createdAt: string;
  requestId?: string;
  modelId?: string;
  /** what was charged for: "chat", "crypto-rpc", ... */
  kind?: string;
  /** TOP_UP: settlement reference (tx hash / signature) and network */
  transaction?: string;
  network?: string;
  /** TOP_UP: atomic units paid on chain */
  paidAtomic?: string;
}

export interface Account {
  /** API key (for kind apiKey) or wallet address (lowercased for EVM) */
  id: string;
  kind: "apiKey" | "wallet";
  /** an API key that may read `/billing/*` (ADMIN); false for an INFERENCE key */
  admin?: boolean;
  usd: number;
  diem: number;
  /** Pro accounts may use Pro-only models */
  pro: boolean;
  /** tier overrides, e.g. partner limits */
  partner: boolean;
  entries: LedgerEntry[];
}

export interface ApiKeyOption {
  key: string;
  usd?: number;
  diem?: number;
  pro?: boolean;
  partner?: boolean;
  /** an INFERENCE key (`false`) is refused by the `/billing/*` routes, which take ADMIN keys (default true) */
  admin?: boolean;
}
