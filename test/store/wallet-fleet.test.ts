/**
 * A wallet's requests in flight across a fleet: three processes, each with its own fetch stack, sign with one
 * wallet and send 4 chat requests at once (12 together, against the live service's 5 per wallet). With one
 * RedisStore they share the 5 (each request takes a place there, with a lease a dead process gives back), and no
 * request is sent to be refused; without a store each process keeps only its own 5 and the service refuses some.
 */
import { fileURLToPath } from "node:url";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { fleet } from "./processes.js";
import { redisAvailable, startRedis, type TestRedis } from "./redis-server.js";

const CHILD = fileURLToPath(new URL("./limits-child.ts", import.meta.url));

let emu: Emulator;
let redis: TestRedis | undefined;
beforeAll(async () => {
  // 300 ms of model time per chat request: 12 at once from three processes overlap for sure
  emu = await startEmulator({ walletStartingUsd: 50, faults: { latencyMs: 300, paths: ["/chat/completions"] } });
  if (redisAvailable) redis = await startRedis();
});
afterAll(async () => {
  await emu?.close();
  await redis?.stop();
});

interface Outcome {
  statuses: number[];
  wire429s: number;
}

/** one fleet member's job: a new wallet's 4 requests through the shared store (or none, `noStore`) */
function walletJob(extra: { noStore?: boolean } = {}) {
  return {
    kind: "wallet",
    ...extra,
    redisUrl: redis!.url,
    prefix: redis!.prefix(),
    baseUrl: emu.url,
    privateKey: Wallet.createRandom().privateKey,
    model: "emu-xs",
    count: 4,
  };
}

describe.skipIf(!redisAvailable)("one wallet's 5 requests in flight, shared by a fleet through Redis", () => {
  it("three processes x 4 requests at once: all served, 0 429s on the wire", async () => {
    const job = walletJob();
    const outcomes = (await fleet<Outcome[]>(CHILD, [job, job, job])).flat();
    expect(outcomes.flatMap((o) => o.statuses)).toEqual(Array(12).fill(200));
    expect(outcomes.reduce((n, o) => n + o.wire429s, 0)).toBe(0);
  }, 60_000);

  it("without the store each process keeps only its own count: the service refuses some (then they are re-sent)", async () => {
    const job = walletJob({ noStore: true });
    const outcomes = (await fleet<Outcome[]>(CHILD, [job, job, job])).flat();
    // the refusals never reach the caller: they are waited out and re-sent
    expect(outcomes.flatMap((o) => o.statuses)).toEqual(Array(12).fill(200));
    expect(outcomes.reduce((n, o) => n + o.wire429s, 0)).toBeGreaterThan(0);
  }, 60_000);
});
