/**
 * The emulator without a chain is honest (hard edges, point 11). Without ganache it offers only the rails it can
 * settle, says so in true words, lists only the crypto RPC networks it serves, and a client gets a typed error at
 * once (never seconds of retried 500s). Loopback only; every wait is bounded.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ToolMessage } from "@langchain/core/messages";
import { startEmulator, type Emulator, type EmulatorOptions } from "langchain-service-emulator";
import { main } from "../../packages/langchain-service-emulator/src/cli.js";
import { ServiceClient } from "../../src/client.js";
import { BadRequestError, PaymentFailedError, UnsupportedNetworkError } from "../../src/http/errors.js";
import { CryptoRpcToolkit } from "../../src/crypto-rpc/index.js";
import { createSiwxHeader } from "../../src/x402/siwx.js";
import { SOLANA_MAINNET } from "../../src/x402/wallets.js";
import { EvmWallet } from "../../src/evm/index.js";

const KEY = "no-chain-key";
/** what `import("litesvm")` throws when the optional package is absent */
const missingLiteSvm = () =>
  Promise.reject(Object.assign(new Error("Cannot find package 'litesvm' imported from x"), { code: "ERR_MODULE_NOT_FOUND" }));
const CHAT = JSON.stringify({ model: "emu-xs", messages: [{ role: "user", content: "hello" }] });
/** a client error that arrives within this is "at once": no backoff series (the default client retries 4 times from 250 ms) */
const FAST_MS = 1_500;

function decode(header: string | null): Record<string, unknown> {
  expect(header).toBeTruthy();
  return JSON.parse(Buffer.from(header!, "base64").toString("utf8")) as Record<string, unknown>;
}

/** Runs `work` under an 8 s deadline; returns what it threw and how long it took. */
async function timedFailure(work: (signal: AbortSignal) => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  const error = await work(AbortSignal.timeout(8_000)).then(
    () => new Error("expected a failure, got an answer"),
    (err: unknown) => err,
  );
  return { error, ms: Date.now() - started };
}

async function startQuietly(options: EmulatorOptions): Promise<{ emu: Emulator; warnings: string[] }> {
  const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
  try {
    const emu = await startEmulator(options);
    return { emu, warnings: warn.mock.calls.map((c) => String(c[0])) };
  } finally {
    warn.mockRestore();
  }
}

describe.each([
  { label: "litesvm missing", x402: { solanaImporter: missingLiteSvm }, warns: true },
  { label: "Solana rail off", x402: { solana: false }, warns: false },
])("no chain and no Solana rail ($label): nothing to pay with", ({ x402, warns }) => {
  let emu: Emulator;
  let warnings: string[];
  beforeAll(async () => {
    ({ emu, warnings } = await startQuietly({ chain: false, apiKeys: [KEY], x402 }));
  });
  afterAll(async () => {
    await emu?.close();
  });

  it("its warnings are true: no rail is left, never 'the Base rail is unaffected'", () => {
    for (const w of warnings) expect(w).not.toMatch(/Base rail is unaffected/);
    if (warns) {
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).not.toContain("\n");
      expect(warnings[0]).toMatch(/litesvm/);
      expect(warnings[0]).toMatch(/no payment rail/i);
    } else {
      expect(warnings).toEqual([]);
    }
  });

  it("API keys keep working", async () => {
    const res = await fetch(`${emu.url}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: CHAT,
      signal: AbortSignal.timeout(5_000),
    });
    expect(res.status).toBe(200);
  });

  it("the top-up 402 keeps its published shape with nothing to pay, and PAYMENT-REQUIRED says why", async () => {
    const res = await fetch(`${emu.url}/x402/top-up`, { method: "POST", signal: AbortSignal.timeout(5_000) });
    expect(res.status).toBe(402);
    // the published body has additionalProperties: false: the reason goes in the x402 object's own `error`
    expect(await res.json()).toEqual({ x402Version: 2, accepts: [] });
    const required = decode(res.headers.get("payment-required"));
    expect(required.accepts).toEqual([]);
    expect(String(required.error)).toMatch(/no payment rail is available in this emulator/i);
  });

  it("a payment sent anyway is a clear 400, never a 5xx", async () => {
    const v1 = { x402Version: 1, scheme: "exact", network: "base", payload: { signature: "0x00", authorization: { value: "5000000" } } };
    const res = await fetch(`${emu.url}/x402/top-up`, {
      method: "POST",
      headers: { "x-402-payment": Buffer.from(JSON.stringify(v1)).toString("base64") },
      signal: AbortSignal.timeout(5_000),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; message: string; details?: { reason?: string } };
    expect(body.error).toBe("X402_INVALID_PAYMENT");
    expect(body.message).toMatch(/no payment rail is available in this emulator/i);
    expect(body.details?.reason).toBe("no_payment_rail");
  });

  it("the discovery 402 offers no payment option", async () => {
    const res = await fetch(`${emu.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: CHAT,
      signal: AbortSignal.timeout(5_000),
    });
    expect(res.status).toBe(402);
    expect(((await res.json()) as { accepts: unknown[] }).accepts).toEqual([]);
    expect(decode(res.headers.get("payment-required")).accepts).toEqual([]);
  });

  it("a signed-in wallet short of credit is told no rail is available, and is given no made-up payee", async () => {
    const url = `${emu.url}/chat/completions`;
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "sign-in-with-x": await createSiwxHeader(EvmWallet.random(), url) },
      body: CHAT,
      signal: AbortSignal.timeout(5_000),
    });
    expect(res.status).toBe(402);
    const body = (await res.json()) as {
      code: string;
      message: string;
      supportedChains: string[];
      topUpInstructions: Record<string, unknown>;
    };
    expect(body.code).toBe("PAYMENT_REQUIRED");
    expect(body.message).toMatch(/no payment rail is available in this emulator/i);
    expect(body.supportedChains).toEqual([]);
    expect(body.topUpInstructions.receiverWallet).toBe("");
    expect(body.topUpInstructions.tokenAddress).toBe("");
    expect(decode(res.headers.get("payment-required")).accepts).toEqual([]);
  });

  it("ServiceClient.topUp with a wallet fails at once with PaymentFailedError", async () => {
    const client = new ServiceClient({
      baseUrl: emu.url,
      wallet: EvmWallet.random(),
      payment: { allowedPayees: ["0x000000000000000000000000000000000000dEaD"] },
    });
    const { error, ms } = await timedFailure(() => client.topUp(5));
    expect(error).toBeInstanceOf(PaymentFailedError);
    expect((error as PaymentFailedError).status).toBe(402);
    expect(ms).toBeLessThan(FAST_MS);
  });

  it("GET /crypto/rpc/networks lists only what it serves: nothing", async () => {
    const res = await fetch(`${emu.url}/crypto/rpc/networks`, { signal: AbortSignal.timeout(5_000) });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ networks: [] });
  });

  it("the proxy answers a network it cannot serve 400 at once, saying why (not a 500 to retry)", async () => {
    const chargesBefore = emu.ledger.totals(emu.account(KEY)!).charges;
    const res = await fetch(`${emu.url}/crypto/rpc/base-mainnet`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId" }),
      signal: AbortSignal.timeout(5_000),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; details: { network: string; supportedNetworks: string[]; reason?: string } };
    expect(body.error).toMatch(/Unsupported network: base-mainnet/);
    expect(body.details).toMatchObject({ network: "base-mainnet", supportedNetworks: [] });
    expect(body.details.reason).toMatch(/no upstream node.*local chain/i);
    // nothing was billed for a refusal
    expect(emu.ledger.totals(emu.account(KEY)!).charges).toBe(chargesBefore);
  });

  it("ServiceClient.cryptoRpc (default retries) gets a typed error at once", async () => {
    const client = new ServiceClient({ baseUrl: emu.url, apiKey: KEY });
    const listed = await timedFailure((signal) => client.cryptoRpc("base-mainnet", { method: "eth_chainId" }, { signal }));
    expect(listed.error).toBeInstanceOf(UnsupportedNetworkError);
    expect((listed.error as UnsupportedNetworkError).validNetworks).toEqual([]);
    expect(listed.ms).toBeLessThan(FAST_MS);
    // without the list check: the proxy's own 400, never retried, turned into the same typed error
    const unchecked = await timedFailure((signal) =>
      client.cryptoRpc("base-mainnet", { method: "eth_chainId" }, { signal, networks: false }),
    );
    expect(unchecked.error).toBeInstanceOf(UnsupportedNetworkError);
    expect((unchecked.error as Error).cause).toBeInstanceOf(BadRequestError);
    expect(((unchecked.error as Error).cause as BadRequestError).status).toBe(400);
    expect(unchecked.ms).toBeLessThan(FAST_MS);
  });

  it("the crypto tools tell the model at once", async () => {
    const client = new ServiceClient({ baseUrl: emu.url, apiKey: KEY });
    const tool = new CryptoRpcToolkit({ client }).getTools().find((t) => t.name === "native_balance")!;
    const started = Date.now();
    const message = (await tool.invoke({
      type: "tool_call",
      id: "c1",
      name: "native_balance",
      args: { network: "base-mainnet", address: "0x000000000000000000000000000000000000dEaD" },
    })) as ToolMessage;
    expect(Date.now() - started).toBeLessThan(FAST_MS);
    expect(JSON.parse(message.content as string).error).toMatchObject({ code: "UNSUPPORTED_NETWORK", validNetworks: [] });
  });
});

describe("no chain, litesvm present: the Solana rail and Solana networks only", () => {
  let emu: Emulator;
  let warnings: string[];
  beforeAll(async () => {
    ({ emu, warnings } = await startQuietly({ chain: false, apiKeys: [KEY] }));
  });
  afterAll(async () => {
    await emu?.close();
  });

  it("warns about nothing, and the top-up 402 offers Solana alone", async () => {
    expect(warnings).toEqual([]);
    const res = await fetch(`${emu.url}/x402/top-up`, { method: "POST", signal: AbortSignal.timeout(5_000) });
    expect(res.status).toBe(402);
    const { accepts } = (await res.json()) as { accepts: { network: string }[] };
    expect(accepts.map((a) => a.network)).toEqual([SOLANA_MAINNET]);
  });

  it("lists and serves the Solana networks; an EVM slug is a typed error at once", async () => {
    const res = await fetch(`${emu.url}/crypto/rpc/networks`, { signal: AbortSignal.timeout(5_000) });
    expect(await res.json()).toEqual({ networks: ["solana-devnet", "solana-mainnet"] });
    const client = new ServiceClient({ baseUrl: emu.url, apiKey: KEY });
    const slot = await client.cryptoRpc("solana-mainnet", { method: "getSlot" }, { signal: AbortSignal.timeout(5_000) });
    expect(typeof slot.result).toBe("number");
    const evm = await timedFailure((signal) => client.cryptoRpc("ethereum-mainnet", { method: "eth_chainId" }, { signal }));
    expect(evm.error).toBeInstanceOf(UnsupportedNetworkError);
    expect(evm.ms).toBeLessThan(FAST_MS);
  });
});

describe("the CLI with --no-chain", () => {
  it("prints the rails and networks it really has", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const emu = await main(["emulator", "--port", "0", "--no-chain", "--api-key", KEY], {
      io: { out: (l) => out.push(l), err: (l) => err.push(l) },
    });
    try {
      const text = out.join("\n");
      expect(text).toMatch(/^x402 top-ups: Solana \(LiteSVM\) only/m);
      expect(text).not.toMatch(/^x402 top-ups:.*Base \(/m);
      expect(text).toMatch(/^crypto RPC networks: solana-devnet, solana-mainnet$/m);
    } finally {
      await emu?.close();
    }
  });
});
