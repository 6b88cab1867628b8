/**
 * The whole store contract (payments and pins, the top-up lease, budgets, pacing, guard, slots) against a third
 * store written only against the documented interface: `HttpStore`, whose state lives in another process behind
 * HTTP on loopback, one serialised object per key as Durable Objects hold it (http-store-server.ts).
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../src/http/errors.js";
import { sharedLimitStore } from "../../src/http/shared-limits.js";
import { describeStoreContract } from "./contract-kit.js";
import { HttpStore } from "./http-store.js";
import { startStoreServer, type StoreServer } from "./http-store-process.js";
import { freePort } from "./redis-server.js";

let server: StoreServer;
beforeAll(async () => {
  server = await startStoreServer();
});
afterAll(async () => {
  await server?.stop();
});

// a new namespace per case: fresh state, as a new Redis prefix gives
describeStoreContract("HttpStore (another process, one object per key)", () => new HttpStore({ url: server.url, namespace: randomUUID() }));

describe("HttpStore, beyond the contract", () => {
  it("is a fleet store: the layers share pacing and guard windows through it", () => {
    const store = new HttpStore({ url: server.url, namespace: randomUUID() });
    expect(sharedLimitStore(store)).toBe(store);
  });

  it("fails closed with a StoreUnavailableError naming the method when nothing answers", async () => {
    const down = new HttpStore({ url: `http://127.0.0.1:${await freePort()}`, namespace: "x", timeoutMs: 2_000 });
    const err = await down.reserveSpend({ scopes: [], candidates: [], now: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as StoreUnavailableError).operation).toBe("reserveSpend");
  });
});
