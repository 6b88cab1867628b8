/**
 * The server's wallet path (spec 2.5 and part 7 variant 3): a SIWX caller is identified by its address, gets
 * balance and rate-limit headers, X-Balance-Remaining after an inference call, and the insufficient-credit
 * 402 from the x402 hooks when its credit is under the minimum. Signing uses the package's own wallet code.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { createSiwxHeader } from "../../src/x402/siwx.js";
import { EvmWallet } from "../../src/evm/index.js";
import { postJson, probeRoute } from "./helpers.js";

// a throwaway local key (ganache's deterministic account 1), never a real one
const wallet = new EvmWallet("0x6cbed15c793ce57650b9877cf6fa156fbef513c4e6134f022a85b1ffdd59b2a1");

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

async function callAsWallet(e: Emulator, body: Record<string, unknown>) {
  const url = `${e.url}/probe/inference`;
  return postJson(url, body, { "sign-in-with-x": await createSiwxHeader(wallet, url) });
}

describe("wallet callers through the pipeline", () => {
  it("served with balance headers before, X-Balance-Remaining after", async () => {
    emu = await startEmulator({ routes: [probeRoute], walletStartingUsd: 1, x402: { balanceHeader: true } }); // the seed's header
    const res = await callAsWallet(emu, { model: "emu-s", usd: 0.125 });
    expect(res.status, await res.clone().text()).toBe(200);
    expect((await res.json()).caller).toBe("wallet");
    expect(res.headers.get("x-service-balance-usd")).toBe("1");
    expect(res.headers.get("x-balance-remaining")).toBe("0.875000");
    expect(res.headers.get("x-ratelimit-remaining-requests")).toBe("74");
    expect(emu.account(wallet.address)!.usd).toBe(0.875);
  });

  it("credit under the minimum gets the insufficient-credit 402, nothing charged", async () => {
    emu = await startEmulator({ routes: [probeRoute], walletStartingUsd: 0 });
    const res = await callAsWallet(emu, { model: "emu-s" });
    expect(res.status).toBe(402);
    const body = await res.json();
    expect(body.code).toBe("PAYMENT_REQUIRED");
    expect(body.topUpInstructions).toBeDefined();
    expect(res.headers.get("x-balance-remaining")).toBeNull();
    expect(emu.account(wallet.address)!.entries).toEqual([]);
  });
});
