/**
 * The payment side of the store contract (`PaymentStore`: budgets and payee pins of top-ups, and the top-up
 * lease), written against the interface only: any store runs it through `describeStoreContract`.
 */
import { describe, expect, it } from "vitest";
import type { PaymentStore, SpendCandidate, SpendScope } from "../../../src/store/types.js";

const N = "eip155:8453";
const N2 = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
const A = "0x1111111111111111111111111111111111111111";
const B = "0x2222222222222222222222222222222222222222";
const C = "8qUL23aSj7mDWdoLMXGHFvnVCT9wd7jXcysiekroADEL";
const DAY = 24 * 60 * 60_000;

const scope = (key: string, capUsd: number, periodMs = DAY, pin = true): SpendScope => ({ key, capUsd, periodMs, pin });
const cand = (payTo: string, amountUsd = 5, network = N): SpendCandidate => ({ network, payTo, amountUsd });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function describePaymentContract(name: string, make: () => PaymentStore, available = true): void {
  describe(`the store contract: ${name}`, () => {
    it.runIf(available)("caps every scope of a reservation; the first scope over its cap refuses, named", async () => {
      const store = make();
      const scopes = [scope("wallet:eip155:0xa1", 10), scope("policy:1", 20)];
      const req = { scopes, candidates: [cand(A)], now: 1_000 };
      expect(await store.reserveSpend(req)).toMatchObject({ ok: true, index: 0 });
      expect(await store.reserveSpend(req)).toMatchObject({ ok: true, index: 0 });
      expect(await store.reserveSpend(req)).toEqual({
        ok: false,
        rule: "maxPerPeriod",
        index: 0,
        detail: "$5 would bring top-ups to $15 within the period, over the $10 cap (wallet)",
      });
      expect(await store.spentUsd("wallet:eip155:0xa1", DAY, 1_000)).toBe(10);
      expect(await store.spentUsd("policy:1", DAY, 1_000)).toBe(10);
      // the policy's own cap binds when the wallet's does not
      const other = [scope("wallet:eip155:0xa2", 100), scope("policy:1", 20)];
      expect(await store.reserveSpend({ scopes: other, candidates: [cand(A)], now: 1_000 })).toMatchObject({ ok: true });
      expect(await store.reserveSpend({ scopes: other, candidates: [cand(A, 6)], now: 1_000 })).toMatchObject({
        ok: false,
        rule: "maxPerPeriod",
        detail: "$6 would bring top-ups to $21 within the period, over the $20 cap (policy)",
      });
    });

    it.runIf(available)("the period rolls: a spend counts for periodMs after its `now`, then no longer", async () => {
      const store = make();
      const scopes = [scope("wallet:eip155:0xb1", 10, 100)];
      const at = (now: number, usd = 5) => store.reserveSpend({ scopes, candidates: [cand(A, usd)], now });
      expect(await at(1_000)).toMatchObject({ ok: true });
      expect(await at(1_050)).toMatchObject({ ok: true });
      expect(await at(1_099)).toMatchObject({ ok: false, rule: "maxPerPeriod" });
      expect(await store.spentUsd(scopes[0]!.key, 100, 1_099)).toBe(10);
      // at 1100 the spend of 1000 is exactly one period old: it no longer counts
      expect(await store.spentUsd(scopes[0]!.key, 100, 1_100)).toBe(5);
      expect(await at(1_100)).toMatchObject({ ok: true });
      expect(await at(1_149)).toMatchObject({ ok: false, rule: "maxPerPeriod" });
      expect(await store.spentUsd(scopes[0]!.key, 100, 1_300)).toBe(0);
      expect(await at(1_300, 10)).toMatchObject({ ok: true });
    });

    it.runIf(available)("fractions add up exactly to the cap (no float drift past it)", async () => {
      const store = make();
      const scopes = [scope("wallet:eip155:0xc1", 1)];
      const results = [];
      for (let i = 0; i < 11; i++) results.push(await store.reserveSpend({ scopes, candidates: [cand(A, 0.1)], now: 5_000 }));
      expect(results.filter((r) => r.ok)).toHaveLength(10);
      expect(results[10]).toMatchObject({
        ok: false,
        rule: "maxPerPeriod",
        detail: "$0.1 would bring top-ups to $1.1 within the period, over the $1 cap (wallet)",
      });
      expect(await store.spentUsd(scopes[0]!.key, DAY, 5_000)).toBe(1);
    });

    it.runIf(available)("pins the first payee per network; later candidates are taken in order of preference", async () => {
      const store = make();
      const w = "wallet:eip155:0xd1";
      const scopes = [scope(w, 100), scope("policy:d", 100, DAY, false)];
      expect(await store.reserveSpend({ scopes, candidates: [cand(A)], now: 1 })).toMatchObject({ ok: true, index: 0 });
      expect(await store.pins(w)).toEqual({ [N]: A });
      expect(await store.pins("policy:d")).toEqual({}); // a scope that does not pin never pins
      // B is preferred but pinned out; A, second choice, is taken
      expect(await store.reserveSpend({ scopes, candidates: [cand(B), cand(A)], now: 2 })).toMatchObject({ ok: true, index: 1 });
      expect(await store.reserveSpend({ scopes, candidates: [cand(B)], now: 3 })).toEqual({
        ok: false,
        rule: "payee",
        detail: `payee ${B} differs from ${A}, the payee wallet paid before on ${N}; list it in allowedPayees if the service really changed it`,
      });
      // another network has its own pin
      expect(await store.reserveSpend({ scopes, candidates: [cand(B), cand(C, 5, N2)], now: 4 })).toMatchObject({ ok: true, index: 1 });
      expect(await store.pins(w)).toEqual({ [N]: A, [N2]: C });
      // a pinning scope refuses, whatever the others say
      expect(
        await store.reserveSpend({ scopes: [scope("wallet:eip155:0xd2", 100), scope(w, 100)], candidates: [cand(B)], now: 5 }),
      ).toMatchObject({
        ok: false,
        rule: "payee",
      });
      expect(await store.spentUsd(w, DAY, 5)).toBe(15);
    });

    it.runIf(available)("release undoes the spend and the pins it set, and only those", async () => {
      const store = make();
      const w = "wallet:eip155:0xe1";
      const scopes = [scope(w, 10)];
      const first = await store.reserveSpend({ scopes, candidates: [cand(A)], now: 10 });
      if (!first.ok) throw new Error("expected a reservation");
      expect(await store.pins(w)).toEqual({ [N]: A });
      await store.releaseSpend(first.reservation);
      expect(await store.pins(w)).toEqual({}); // nothing was signed: nothing to trust yet
      expect(await store.spentUsd(w, DAY, 10)).toBe(0);
      // B can now be the first payee; a second reservation to B does not own the pin, so its release keeps it
      const second = await store.reserveSpend({ scopes, candidates: [cand(B)], now: 11 });
      const third = await store.reserveSpend({ scopes, candidates: [cand(B)], now: 12 });
      if (!second.ok || !third.ok) throw new Error("expected reservations");
      await store.commitSpend(second.reservation);
      await store.releaseSpend(third.reservation);
      expect(await store.pins(w)).toEqual({ [N]: B });
      expect(await store.spentUsd(w, DAY, 12)).toBe(5);
      // the budget it gave back can be spent again
      expect(await store.reserveSpend({ scopes, candidates: [cand(B)], now: 13 })).toMatchObject({ ok: true });
      await store.releaseSpend("no-such-reservation"); // unknown: nothing happens
      expect(await store.spentUsd(w, DAY, 13)).toBe(10);
    });

    it.runIf(available)("a committed reservation stays spent: releasing it afterwards changes nothing", async () => {
      const store = make();
      const w = "wallet:eip155:0xf1";
      const r = await store.reserveSpend({ scopes: [scope(w, 10)], candidates: [cand(A)], now: 10 });
      if (!r.ok) throw new Error("expected a reservation");
      await store.commitSpend(r.reservation);
      await store.releaseSpend(r.reservation);
      expect(await store.spentUsd(w, DAY, 10)).toBe(5);
      expect(await store.pins(w)).toEqual({ [N]: A });
    });

    it.runIf(available)("a dry run checks pins and budgets and reserves nothing", async () => {
      const store = make();
      const w = "wallet:eip155:0xa9";
      const scopes = [scope(w, 10)];
      expect(await store.reserveSpend({ scopes, candidates: [cand(A)], now: 1, dryRun: true })).toEqual({
        ok: false,
        rule: "dryRun",
        index: 0,
        detail: `would pay $5 on ${N} to ${A}`,
      });
      expect(await store.spentUsd(w, DAY, 1)).toBe(0);
      expect(await store.pins(w)).toEqual({});
      expect(await store.reserveSpend({ scopes, candidates: [cand(A, 11)], now: 1, dryRun: true })).toMatchObject({ rule: "maxPerPeriod" });
      await store.reserveSpend({ scopes, candidates: [cand(A)], now: 1 });
      expect(await store.reserveSpend({ scopes, candidates: [cand(B)], now: 1, dryRun: true })).toMatchObject({ rule: "payee" });
    });

    it.runIf(available)("100 concurrent reservations against a $50 cap: exactly 10 of $5", async () => {
      const store = make();
      const scopes = [scope("wallet:eip155:0xab", 50)];
      const all = await Promise.all(Array.from({ length: 100 }, () => store.reserveSpend({ scopes, candidates: [cand(A)], now: 7 })));
      expect(all.filter((r) => r.ok)).toHaveLength(10);
      expect(await store.spentUsd(scopes[0]!.key, DAY, 7)).toBe(50);
    });
  });
}

/**
 * `pass(ms)` moves the store's clock on by `ms` for the lease cases (default: waits that long in real time; a store
 * on the process's `Date.now` may move a fake Date instead).
 */
export function describeTopUpContract(
  name: string,
  make: () => PaymentStore,
  available = true,
  pass: (ms: number) => Promise<unknown> = sleep,
): void {
  describe(`the top-up lease: ${name}`, () => {
    const W = "wallet:eip155:0xabc";
    const record = (id: string, expiresAt = Date.now() + 60_000) => ({ id, expiresAt, data: JSON.stringify({ id }) });

    it.runIf(available)("one holder at a time; a lapsed lease goes to the next with a larger token", async () => {
      const store = make();
      const first = await store.acquireTopUpLease(W, 300);
      expect(first).toMatchObject({ epoch: 0, leased: true });
      expect(first.token).toBeGreaterThan(0);
      // held: the next caller gets no token, and sees it held
      expect(await store.acquireTopUpLease(W, 300)).toEqual({ epoch: 0, leased: true });
      expect(await store.renewTopUpLease(W, first.token!, 300)).toBe(true);
      await pass(400);
      // lapsed (its holder died): free for the next, fenced by a new token
      expect(await store.topUpState(W)).toEqual({ epoch: 0, leased: false });
      const second = await store.acquireTopUpLease(W, 300);
      expect(second.token).toBeGreaterThan(first.token!);
      // the lapsed holder can neither renew nor write, nor release the new holder's lease
      expect(await store.renewTopUpLease(W, first.token!, 300)).toBe(false);
      expect(await store.putPendingPayment(W, first.token!, record("p-old"))).toBe(false);
      expect(await store.endTopUp(W, first.token!, { settled: false })).toEqual({ epoch: 0, leased: true });
      expect((await store.topUpState(W)).pending).toBeUndefined();
    });

    it.runIf(available)("a pending payment outlives its holder's lease, until its outcome is known", async () => {
      const store = make();
      const a = await store.acquireTopUpLease(W, 200);
      const p = record("p1");
      expect(await store.putPendingPayment(W, a.token!, p)).toBe(true);
      await pass(300); // the holder died while paying
      const b = await store.acquireTopUpLease(W, 5_000);
      expect(b).toMatchObject({ leased: true, epoch: 0, pending: p });
      // the next holder settles it: cleared, the epoch moves on, the lease is free
      expect(await store.endTopUp(W, b.token!, { settled: true, clearPending: "p1" })).toEqual({ epoch: 1, leased: false });
      expect(await store.topUpState(W)).toEqual({ epoch: 1, leased: false });
    });

    it.runIf(available)("ending clears only the named pending payment; an unknown outcome keeps it", async () => {
      const store = make();
      const a = await store.acquireTopUpLease(W, 5_000);
      await store.putPendingPayment(W, a.token!, record("p2"));
      // unknown outcome: the lease goes, the payment stays for the next holder to re-send
      expect(await store.endTopUp(W, a.token!, { settled: false })).toMatchObject({ leased: false, pending: { id: "p2" } });
      const b = await store.acquireTopUpLease(W, 5_000);
      expect(await store.endTopUp(W, b.token!, { settled: false, clearPending: "other" })).toMatchObject({ pending: { id: "p2" } });
      const c = await store.acquireTopUpLease(W, 5_000);
      expect(await store.endTopUp(W, c.token!, { settled: false, clearPending: "p2" })).toEqual({ epoch: 0, leased: false });
    });

    it.runIf(available)(
      "an outcome is a fact: a lapsed holder's end still clears its payment and moves the epoch, but frees only its own lease",
      async () => {
        const store = make();
        const a = await store.acquireTopUpLease(W, 1_000);
        expect(await store.putPendingPayment(W, a.token!, record("p3"))).toBe(true);
        await pass(1_100);
        const b = await store.acquireTopUpLease(W, 5_000);
        expect(b.token).toBeGreaterThan(a.token!);
        // the first holder learns late that its payment settled: recorded, and b keeps the lease
        expect(await store.endTopUp(W, a.token!, { settled: true, clearPending: "p3" })).toEqual({ epoch: 1, leased: true });
        // the next lease holder is told the payment's outcome is known
        expect(await store.endTopUp(W, b.token!, { settled: false })).toEqual({ epoch: 1, leased: false });
        const c = await store.acquireTopUpLease(W, 5_000);
        expect(c.token !== undefined && c.resolved).toEqual(["p3"]);
      },
    );

    it.runIf(available)("20 concurrent acquirers: exactly one token", async () => {
      const store = make();
      const all = await Promise.all(Array.from({ length: 20 }, () => store.acquireTopUpLease("wallet:eip155:0xrace", 5_000)));
      expect(all.filter((o) => o.token !== undefined)).toHaveLength(1);
    });
  });
}
