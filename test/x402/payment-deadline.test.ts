/**
 * Issue 35: a deadline covers a payment in flight. `/x402/top-up` stalls (the emulator's latency fault on that path);
 * a call with `totalTimeout` (or its own signal) ends at its deadline, whether it drives the top-up or waits on
 * another's, for chat, embeddings, crypto RPC and images. Before, each rejected only after two stalls (the report:
 * 8.1-8.4 s at a 4 s stall and totalTimeout 2000). The
 * top-up is the wallet's, not the call's: it runs on to its end, and the next call finds the credit and pays
 * nothing more (one transfer on chain).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Emulator } from "langchain-service-emulator";
import { ChatService } from "../../src/chat/index.js";
import { ServiceClient, ServiceEmbeddings, TimeoutError } from "../../src/index.js";
import { payer, startPaidEmulator, testPolicy, unpacedRoutes, usdcBalance } from "./helpers.js";

const STALL_MS = 2_500;
const DEADLINE_MS = 800;
/** 100 ms plus a turn of a loaded 2-core machine's event loop */
const MARGIN_MS = 250;

let emu: Emulator;
beforeAll(async () => {
  emu = await startPaidEmulator({ chain: { accounts: 12 }, faults: { latencyMs: STALL_MS, paths: ["/x402/top-up"] } });
});
afterAll(() => emu?.close());

type Call = (faces: ReturnType<typeof facesOf>, signal: AbortSignal | undefined) => Promise<unknown>;
const CALLS: [string, Call][] = [
  ["ChatService.invoke", (f, signal) => f.model.invoke("hi", { signal })],
  ["ServiceEmbeddings.embedWithUsage", (f, signal) => f.embeddings.embedWithUsage(["hi"], { signal })],
  ["ServiceClient.cryptoRpc", (f, signal) => f.client.cryptoRpc("base-mainnet", { method: "eth_blockNumber" }, { signal })],
  [
    "ServiceClient.generateImage",
    (f, signal) => f.client.generateImage({ model: "emu-image", prompt: "a boat", width: 64, height: 64 }, { signal }),
  ],
];

function facesOf(index: number, totalTimeout?: number) {
  const client = new ServiceClient({
    baseUrl: emu.url,
    wallet: payer(emu, index),
    payment: testPolicy(emu),
    pacing: unpacedRoutes,
    totalTimeout,
  });
  return {
    client,
    model: new ChatService({ serviceFetch: client.fetch, model: "emu-xs", maxTokens: 16 }),
    embeddings: new ServiceEmbeddings({ serviceFetch: client.fetch, model: "text-embedding-bge-m3" }),
  };
}

async function ended(p: Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const started = Date.now();
  try {
    await p;
    return { err: undefined, ms: Date.now() - started };
  } catch (err) {
    return { err, ms: Date.now() - started };
  }
}

describe("a deadline covers a top-up in flight (the top-up endpoint stalls)", () => {
  let index = 1;
  for (const [name, call] of CALLS) {
    for (const how of ["totalTimeout", "signal"] as const) {
      it(`${name}, by ${how}: the call that drives the top-up and one that waits on it end at the deadline`, {
        timeout: 20_000,
      }, async () => {
        const faces = facesOf(index++, how === "totalTimeout" ? DEADLINE_MS : undefined);
        const signal = () => (how === "signal" ? AbortSignal.timeout(DEADLINE_MS) : undefined);
        const driver = ended(call(faces, signal()));
        await new Promise((r) => setTimeout(r, 100));
        const waiter = ended(call(faces, signal()));
        for (const [who, outcome, deadline] of [
          ["driver", await driver, DEADLINE_MS],
          ["waiter", await waiter, DEADLINE_MS],
        ] as const) {
          expect(outcome.err, `${who} did not fail`).toBeInstanceOf(TimeoutError);
          expect(outcome.ms, `${who} ended ${outcome.ms} ms after it started`).toBeLessThan(deadline + MARGIN_MS);
        }
      });
    }
  }

  it("the top-up goes on to its end: the next call finds the credit, and the wallet paid once", { timeout: 30_000 }, async () => {
    const wallet = payer(emu, 10);
    const before = await usdcBalance(emu, wallet.address);
    const faces = facesOf(10, DEADLINE_MS);
    expect((await ended(faces.model.invoke("first"))).err).toBeInstanceOf(TimeoutError);
    // a call with time to spare joins the top-up still in flight (both its requests stall), and is served with its credit
    const patient = facesOf(10);
    const answer = await patient.model.invoke("second");
    expect(String(answer.content).length).toBeGreaterThan(0);
    expect(before - (await usdcBalance(emu, wallet.address))).toBe(5_000_000n);
    expect(await patient.client.getX402Balance()).toMatchObject({ balanceUsd: expect.any(Number) });
  });
});
