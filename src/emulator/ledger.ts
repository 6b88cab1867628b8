/**
 * The emulator's honest ledger: accounts (API keys and wallets) with USD and staking-token (DIEM) balances,
 * and every top-up and charge as an entry. Charges take DIEM first, then USD (the service bills the staking
 * token's daily credit before USD credit).
 */
import { randomUUID } from "node:crypto";
import type { Account, ApiKeyOption, LedgerEntry } from "./types.js";

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

export class Ledger {
  readonly accounts = new Map<string, Account>();

  addApiKey(option: string | ApiKeyOption): Account {
    const o = typeof option === "string" ? { key: option } : option;
    const account: Account = {
      id: o.key,
      kind: "apiKey",
      usd: o.usd ?? DEFAULT_KEY_USD,
      diem: o.diem ?? DEFAULT_KEY_DIEM,
      pro: o.pro ?? false,
      partner: o.partner ?? false,
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
    const amount = round6(Math.max(0, amountUsd));
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

  /** Sum of credited top-ups and of charges, for honest-ledger assertions. */
  totals(account: Account): { toppedUp: number; charged: number; topUps: number; charges: number } {
    let toppedUp = 0;
    let charged = 0;
    let topUps = 0;
    let charges = 0;
    for (const e of account.entries) {
      if (e.type === "TOP_UP") (toppedUp += e.amount), topUps++;
      else if (e.type === "CHARGE") (charged -= e.amount), charges++;
    }
    return { toppedUp: round6(toppedUp), charged: round6(charged), topUps, charges };
  }
}
