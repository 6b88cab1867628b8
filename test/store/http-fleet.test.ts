/**
 * A fleet on the HTTP store: separate Node processes, each with its own HttpStore client on one store server
 * (another process, one serialised object per key, as Durable Objects): the same fleet guarantees as on Redis.
 * A wallet's top-up is paid once for 4 processes x 25 requests hitting 402, and 4 processes trying 3x a $20
 * period cap at once reserve exactly $20.
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PaymentPolicy, walletScopeKey } from "../../src/x402/policy.js";
import { EvmWallet } from "../../src/evm/index.js";
import { PAYEE_A, hostileServers } from "../hostile/server.js";
import { PAYER, creditServices, type PayerResult } from "./fleet-service.js";
import { HttpStore } from "./http-store.js";
import { startStoreServer, type StoreServer } from "./http-store-process.js";
import { fleet } from "./processes.js";

const CHILD = fileURLToPath(new URL("./fleet-child.ts", import.meta.url));

let server: StoreServer;
beforeAll(async () => {
  server = await startStoreServer();
});
afterAll(async () => {
  await server?.stop();
});
const creditService = creditServices(hostileServers());

describe("a fleet sharing one HTTP store (state in another process)", () => {
  it("4 processes x 25 concurrent requests hitting 402: one payment signed, every request served", async () => {
    const { svc, state } = await creditService();
    const job = {
      service: svc.url,
      storeUrl: server.url,
      prefix: randomUUID(),
      privateKey: Wallet.createRandom().privateKey,
      requests: 25,
    };
    const results = await fleet<PayerResult>(PAYER, [job, job, job, job], 60_000);
    expect(results.flatMap((r) => r.statuses)).toEqual(Array(100).fill(200));
    expect(state.signed).toHaveLength(1);
    expect(results.flatMap((r) => r.events).filter((e) => e === "payment.signed")).toHaveLength(1);
  }, 90_000);

  it("four processes each try 3x the wallet's $20 period cap at once: exactly $20 is reserved", async () => {
    const prefix = randomUUID();
    const wallet = EvmWallet.random().address;
    const job = { kind: "budget", storeUrl: server.url, prefix, wallet, capUsd: 20, attempts: 12, payee: PAYEE_A };
    const outcomes = (await fleet<string[]>(CHILD, [job, job, job, job])).flat();
    expect(outcomes).toHaveLength(48);
    expect(outcomes.filter((o) => o === "ok")).toHaveLength(4);
    expect(outcomes.filter((o) => o !== "ok")).toEqual(Array(44).fill("PaymentPolicyError:maxPerPeriod"));
    const store = new HttpStore({ url: server.url, namespace: prefix });
    expect(await store.spentUsd(walletScopeKey("eip155", wallet), 24 * 60 * 60_000, Date.now())).toBe(20);
    expect(await new PaymentPolicy({ maxPerPeriodUsd: 20 }).spentUsd({ address: wallet, namespace: "eip155" }, store)).toBe(20);
  }, 90_000);
});
