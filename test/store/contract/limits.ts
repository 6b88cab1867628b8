/**
 * The limits side of the store contract (`LimitStore`: pacing windows, the abuse guard's failure window, slots).
 * Times are the caller's (`now`), so windows are driven without waiting.
 */
import { describe, expect, it } from "vitest";
import type { LimitStore, PaceObservation, PaceRequest } from "../../../src/http/shared-limits.js";

export const T0 = 1_700_000_000_000; // a whole second, as the service's windows start
const MARGIN = 20;
let sends = 0;
/** a pacing request at `now` (a fresh send id unless given); the Redis-only tests of limits-contract.test.ts ask the same */
export const ask = (now: number, tokens = 0, id = `s${++sends}`): PaceRequest => ({
  now,
  tokens,
  marginMs: MARGIN,
  probeMs: 5000,
  ttlMs: 120_000,
  id,
  flightMs: 30_000,
});
/** what an answer told of the window at `now` */
export const told = (
  now: number,
  limit: number,
  remaining: number,
  resetAt: number,
  extra: Partial<PaceObservation> = {},
): PaceObservation => ({
  now,
  marginMs: MARGIN,
  ttlMs: 120_000,
  flightMs: 30_000,
  requests: { limit, remaining, resetAt },
  ...extra,
});

export function describeLimitContract(name: string, make: () => LimitStore, available = true): void {
  describe(`the limits contract: ${name}`, () => {
    it.runIf(available)("no limit known: one probe goes, the others wait for its answer; the answer ends the probe", async () => {
      const s = make();
      expect(await s.acquirePace("k|m", ask(T0))).toEqual({ granted: true, waitMs: 0 });
      expect(await s.acquirePace("k|m", ask(T0 + 1))).toEqual({ granted: false, waitMs: -1 });
      // a probe whose process died is taken over once its lease (probeMs) ends
      expect(await s.acquirePace("k|m", ask(T0 + 5001))).toEqual({ granted: true, waitMs: 0 });
      await s.observePace("k|m", told(T0 + 5010, 3, 2, T0 + 60_000));
      // one of 3 is counted by the service: 2 places left in the window, then a wait until its reset + margin
      expect(await s.acquirePace("k|m", ask(T0 + 5020))).toEqual({ granted: true, waitMs: 0 });
      expect(await s.acquirePace("k|m", ask(T0 + 5021))).toEqual({ granted: true, waitMs: 0 });
      expect(await s.acquirePace("k|m", ask(T0 + 5022))).toEqual({ granted: false, waitMs: 60_000 + MARGIN - 5022 });
      // another model of the key has windows of its own
      expect(await s.acquirePace("k|other", ask(T0 + 5023))).toEqual({ granted: true, waitMs: 0 });
    });

    it.runIf(available)("a window is shared: 3x its limit asked at once, exactly the limit is granted", async () => {
      const s = make();
      await s.acquirePace("k|m", ask(T0));
      await s.observePace("k|m", told(T0 + 5, 10, 9, T0 + 1000));
      const grants = await Promise.all(Array.from({ length: 30 }, (_, i) => s.acquirePace("k|m", ask(T0 + 10 + (i % 3)))));
      expect(grants.filter((g) => g.granted)).toHaveLength(9);
      expect(grants.filter((g) => !g.granted).every((g) => g.waitMs > 0 && g.waitMs <= 1000 + MARGIN)).toBe(true);
    });

    it.runIf(available)(
      "the window rolls margin ms after its reset; until an answer tells the new reset, the limit still holds",
      async () => {
        const s = make();
        await s.acquirePace("k|m", ask(T0));
        await s.observePace("k|m", told(T0 + 5, 2, 1, T0 + 1000));
        expect((await s.acquirePace("k|m", ask(T0 + 10, 0, "a"))).granted).toBe(true);
        await s.observePace("k|m", told(T0 + 15, 2, 0, T0 + 1000, { id: "a" }));
        expect(await s.acquirePace("k|m", ask(T0 + 1000 + MARGIN - 1))).toEqual({ granted: false, waitMs: 1 });
        // new window: 2 places, its end unknown until an answer names it (-1: wait for that answer)
        expect((await s.acquirePace("k|m", ask(T0 + 1000 + MARGIN))).granted).toBe(true);
        expect((await s.acquirePace("k|m", ask(T0 + 1000 + MARGIN + 1))).granted).toBe(true);
        expect(await s.acquirePace("k|m", ask(T0 + 1000 + MARGIN + 2))).toEqual({ granted: false, waitMs: -1 });
        // a late answer of the old window tells nothing new
        await s.observePace("k|m", told(T0 + 1030, 2, 1, T0 + 1000));
        expect(await s.acquirePace("k|m", ask(T0 + 1031))).toEqual({ granted: false, waitMs: -1 });
        await s.observePace("k|m", told(T0 + 1040, 2, 1, T0 + 2000));
        expect(await s.acquirePace("k|m", ask(T0 + 1041))).toEqual({ granted: false, waitMs: 2000 + MARGIN - 1041 });
      },
    );

    it.runIf(available)(
      "a send in flight when the window rolls counts in the new one, until its answer shows it landed in the old",
      async () => {
        const s = make();
        await s.acquirePace("k|m", ask(T0));
        await s.observePace("k|m", told(T0 + 5, 2, 1, T0 + 1000));
        expect((await s.acquirePace("k|m", ask(T0 + 990, 0, "late"))).granted).toBe(true);
        // rolled with "late" still out: one place left, not two
        expect((await s.acquirePace("k|m", ask(T0 + 1000 + MARGIN, 0, "b"))).granted).toBe(true);
        expect(await s.acquirePace("k|m", ask(T0 + 1000 + MARGIN + 1))).toEqual({ granted: false, waitMs: -1 });
        // its answer names the old window: the service counted it there, its place in the new one is free
        await s.observePace("k|m", told(T0 + 1025, 2, 0, T0 + 1000, { id: "late" }));
        expect((await s.acquirePace("k|m", ask(T0 + 1026, 0, "c"))).granted).toBe(true);
        expect((await s.acquirePace("k|m", ask(T0 + 1027))).granted).toBe(false);
        // one that landed in the new window keeps its place
        const t1 = T0 + 2000 + MARGIN;
        await s.observePace("k|m", told(T0 + 1030, 2, 0, T0 + 2000, { id: "b" }));
        await s.observePace("k|m", told(T0 + 1031, 2, 0, T0 + 2000, { id: "c" }));
        expect((await s.acquirePace("k|m", ask(T0 + 1990, 0, "late2"))).granted).toBe(false);
        expect((await s.acquirePace("k|m", ask(t1, 0, "d"))).granted).toBe(true);
        expect((await s.acquirePace("k|m", ask(t1 + 1, 0, "e"))).granted).toBe(true);
        await s.observePace("k|m", told(t1 + 5, 2, 1, T0 + 3000, { id: "d" }));
        expect(await s.acquirePace("k|m", ask(t1 + 6))).toEqual({ granted: false, waitMs: 3000 + MARGIN - 2000 - MARGIN - 6 });
      },
    );

    it.runIf(available)("the service's count wins when it is higher (callers the store does not see)", async () => {
      const s = make();
      await s.acquirePace("k|m", ask(T0));
      await s.observePace("k|m", told(T0 + 5, 10, 3, T0 + 1000)); // 7 counted: someone else sent 6
      const grants = await Promise.all(Array.from({ length: 5 }, () => s.acquirePace("k|m", ask(T0 + 10))));
      expect(grants.filter((g) => g.granted)).toHaveLength(3);
    });

    it.runIf(available)(
      "tokens: a send waits when its estimate does not fit the token window; one larger than the window goes",
      async () => {
        const s = make();
        await s.acquirePace("k|m", ask(T0));
        await s.observePace("k|m", told(T0 + 5, 100, 99, T0 + 1000, { tokens: { limit: 500, remaining: 450, resetAt: T0 + 1005 } }));
        expect((await s.acquirePace("k|m", ask(T0 + 10, 300))).granted).toBe(true);
        // 50 + 300 used of 500: 200 do not fit; the tokens' reset snapped to the requests' exact one
        expect(await s.acquirePace("k|m", ask(T0 + 11, 200))).toEqual({ granted: false, waitMs: 1000 + MARGIN - 11 });
        expect((await s.acquirePace("k|m", ask(T0 + 12, 600))).granted).toBe(true);
        // it counts what it may use: the window is now over its tokens until the reset
        expect((await s.acquirePace("k|m", ask(T0 + 13, 100))).granted).toBe(false);
        expect((await s.acquirePace("k|m", ask(T0 + 1000 + MARGIN, 100))).granted).toBe(true);
      },
    );

    it.runIf(available)(
      "tokens, live: no tokens left holds a send without an estimate too; an exact (Unix ms) token reset is its own",
      async () => {
        const s = make();
        await s.acquirePace("k|m", ask(T0));
        // the request window resets in a minute, the token window (exact, live) 600 ms after a whole second
        await s.observePace(
          "k|m",
          told(T0 + 5, 100, 99, T0 + 60_000, { tokens: { limit: 500, remaining: 0, resetAt: T0 + 1_600, exact: true } }),
        );
        expect(await s.acquirePace("k|m", ask(T0 + 10))).toEqual({ granted: false, waitMs: 1_600 + MARGIN - 10 });
        expect((await s.acquirePace("k|m", ask(T0 + 1_600 + MARGIN))).granted).toBe(true);
        // a live token reset a fraction of a second after the request reset is not taken for it
        const k = "k|near";
        await s.acquirePace(k, ask(T0));
        await s.observePace(
          k,
          told(T0 + 5, 100, 99, T0 + 1_000, { tokens: { limit: 500, remaining: 0, resetAt: T0 + 1_400, exact: true } }),
        );
        expect(await s.acquirePace(k, ask(T0 + 10, 50))).toEqual({ granted: false, waitMs: 1_400 + MARGIN - 10 });
      },
    );

    it.runIf(available)("a 429's pause holds every send until it ends; an answer without limits makes the key unmetered", async () => {
      const s = make();
      await s.acquirePace("k|m", ask(T0));
      await s.observePace("k|m", told(T0 + 5, 10, 0, T0 + 3000, { pauseUntil: T0 + 3000 }));
      expect(await s.acquirePace("k|m", ask(T0 + 100))).toEqual({ granted: false, waitMs: 2900 });
      const u = "k|unmetered";
      expect((await s.acquirePace(u, ask(T0))).granted).toBe(true);
      await s.observePace(u, { now: T0 + 5, marginMs: MARGIN, ttlMs: 120_000, flightMs: 30_000, unmetered: true });
      const all = await Promise.all(Array.from({ length: 5 }, () => s.acquirePace(u, ask(T0 + 6))));
      expect(all.every((g) => g.granted)).toBe(true);
    });

    it.runIf(available)("guard: failures + sends in flight stay below maxFailures; failures age out of the window", async () => {
      const s = make();
      const g = (now: number, id: string) => s.acquireGuard("o|k", { now, id, maxFailures: 3, windowMs: 30_000, leaseMs: 30_000 });
      expect(await g(T0, "a")).toEqual({ granted: true, waitMs: 0, failures: 0 });
      expect(await g(T0, "b")).toEqual({ granted: true, waitMs: 0, failures: 0 });
      expect(await g(T0, "c")).toEqual({ granted: true, waitMs: 0, failures: 0 });
      // three in flight: all three may fail, a fourth send waits for one to end
      expect(await g(T0, "d")).toEqual({ granted: false, waitMs: 25, failures: 0 });
      for (const id of ["a", "b", "c"]) await s.releaseGuard("o|k", { now: T0 + 10, id, failed: true, windowMs: 30_000 });
      expect(await g(T0 + 20, "d")).toEqual({ granted: false, waitMs: 10 + 30_000 - 20 + 1, failures: 3 });
      // the oldest failure ages out: room for one
      expect(await g(T0 + 30_010, "d")).toEqual({ granted: true, waitMs: 0, failures: 0 });
    });

    it.runIf(available)("guard: a successful send frees its place without a failure; a lapsed place frees itself", async () => {
      const s = make();
      const g = (now: number, id: string) => s.acquireGuard("o|k", { now, id, maxFailures: 2, windowMs: 30_000, leaseMs: 1000 });
      expect((await g(T0, "a")).granted).toBe(true);
      expect((await g(T0, "b")).granted).toBe(true);
      expect((await g(T0, "c")).granted).toBe(false);
      await s.releaseGuard("o|k", { now: T0 + 5, id: "a", failed: false, windowMs: 30_000 });
      expect(await g(T0 + 6, "c")).toEqual({ granted: true, waitMs: 0, failures: 0 });
      // "b" and "c" never come back (their process died): their places lapse with the lease
      expect((await g(T0 + 500, "d")).granted).toBe(false);
      expect((await g(T0 + 1007, "d")).granted).toBe(true);
    });
  });
}

export function describeSlotContract(name: string, make: () => LimitStore, available = true): void {
  describe(`requests in flight (slots): ${name}`, () => {
    it.runIf(available)("at most `limit` places; a released place is free again; a lapsed one frees itself", async () => {
      const s = make();
      const take = (now: number, id: string) => s.acquireSlot!("o|wallet:0xab|wallet", { now, id, limit: 2, leaseMs: 1000 });
      expect(await take(T0, "a")).toEqual({ granted: true, held: 1 });
      expect(await take(T0, "b")).toEqual({ granted: true, held: 2 });
      expect(await take(T0, "c")).toEqual({ granted: false, held: 2 });
      await s.releaseSlot!("o|wallet:0xab|wallet", "a");
      expect(await take(T0 + 5, "c")).toEqual({ granted: true, held: 2 });
      // "b" is renewed while its stream runs; "c" is never heard of again (its process died): it lapses
      expect(await s.renewSlot!("o|wallet:0xab|wallet", { now: T0 + 900, id: "b", leaseMs: 1000 })).toBe(true);
      expect((await take(T0 + 990, "d")).granted).toBe(false);
      expect(await take(T0 + 1006, "d")).toEqual({ granted: true, held: 2 });
      // a lapsed place is not taken back by a late renewal
      expect(await s.renewSlot!("o|wallet:0xab|wallet", { now: T0 + 1010, id: "c", leaseMs: 1000 })).toBe(false);
      await s.releaseSlot!("o|wallet:0xab|wallet", "no-such-id"); // no error
    });
  });
}
