/**
 * Fidelity: the codes of a refused wallet sign-in, on the wire.
 *
 * The live service answers a refused sign-in on inference with 401 `{error, code: "X402_SIGN_IN_<cause>"}`
 * (`EXPIRED`, `NONCE_REUSED`, `INVALID_SIGNATURE`, `DOMAIN_MISMATCH`, …: its auth guide's list); the seed contract
 * answers `X402_INVALID_SIGN_IN` to them all. The emulator answers the live code of each cause in its default
 * mode, EVM and Solana; the seed's one code with `mode: "seed"` or `x402.signInCodes: "seed"`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../src/emulator/index.js";
import { toBase64Json } from "../../src/x402/encoding.js";
import { createSiwxHeader, createSiwxPayload } from "../../src/x402/siwx.js";
import { EvmWallet, SolanaWallet, type X402Wallet } from "../../src/x402/wallets.js";
import { probeRoute } from "../emulator/helpers.js";

const PROBE = { model: "emu-s", usd: 0.001 };
const SIX_MINUTES_AGO = () => Date.now() - 6 * 60_000;

let started: Emulator[] = [];
afterEach(async () => {
  await Promise.all(started.map((e) => e.close()));
  started = [];
});

async function start(options: Parameters<typeof startEmulator>[0] = {}): Promise<Emulator> {
  const emu = await startEmulator({ routes: [probeRoute], walletStartingUsd: 1, ...options, x402: { solana: false, ...options.x402 } });
  started.push(emu);
  return emu;
}

function probe(e: Emulator, header: string): Promise<Response> {
  return fetch(`${e.url}/probe/inference`, {
    method: "POST",
    headers: { "content-type": "application/json", "sign-in-with-x": header },
    body: JSON.stringify(PROBE),
  });
}

const KINDS = [
  ["EVM", () => EvmWallet.random(), 1],
  ["Solana", () => SolanaWallet.random(), "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"],
] as const;

/** One header per cause, for emulator `e`: [live code, details.reason, header]. A reused nonce is sent twice. */
async function causes(e: Emulator, wallet: X402Wallet, other: X402Wallet, otherChain: number | string): Promise<[string, string, string][]> {
  const url = `${e.url}/probe/inference`;
  const good = await createSiwxPayload(wallet, url);
  const port = new URL(e.url).port;
  return [
    ["X402_SIGN_IN_EXPIRED", "stale", await createSiwxHeader(wallet, url, { now: SIX_MINUTES_AGO(), ttlMs: 60 * 60_000 })],
    ["X402_SIGN_IN_EXPIRED", "expired", await createSiwxHeader(wallet, url, { now: Date.now() - 60_000, ttlMs: 30_000 })],
    ["X402_SIGN_IN_FUTURE_TIMESTAMP", "issued_in_future", await createSiwxHeader(wallet, url, { now: Date.now() + 60_000 })],
    ["X402_SIGN_IN_NONCE_REUSED", "nonce_reused", await createSiwxHeader(wallet, url)],
    ["X402_SIGN_IN_INVALID_SIGNATURE", "invalid_signature", toBase64Json({ ...good, signature: (await createSiwxPayload(other, url)).signature })],
    ["X402_SIGN_IN_DOMAIN_MISMATCH", "domain_mismatch", await createSiwxHeader(wallet, "http://evil.example/api/v1")],
    // the same host and port, another origin (https): the uri is not the service's
    ["X402_SIGN_IN_DOMAIN_MISMATCH", "uri_mismatch", await createSiwxHeader(wallet, `https://127.0.0.1:${port}/api/v1`)],
    ["X402_SIGN_IN_ADDRESS_MISMATCH", "address_mismatch", toBase64Json({ ...good, address: other.address })],
    ["X402_SIGN_IN_UNSUPPORTED_CHAIN", "unsupported_chain", toBase64Json({ ...good, chainId: otherChain })],
    ["X402_SIGN_IN_INVALID_MESSAGE", "malformed", toBase64Json({ ...good, message: "not a sign-in message" })],
    ["X402_SIGN_IN_INVALID_PAYLOAD", "malformed", toBase64Json({ address: wallet.address })],
    ["X402_SIGN_IN_PARSE_ERROR", "malformed", "not base64 json"],
  ];
}

/** Sends each cause's header to `e` and returns what came back: [code, reason] per cause. */
async function answers(e: Emulator, wallet: X402Wallet, other: X402Wallet, otherChain: number | string): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for (const [, reason, header] of await causes(e, wallet, other, otherChain)) {
    if (reason === "nonce_reused") expect((await probe(e, header)).status, "first use of the nonce").toBe(200);
    const res = await probe(e, header);
    expect(res.status, reason).toBe(401);
    const body = (await res.json()) as { error: string; code: string; details: { reason: string } };
    // the body's shape is the emulator's for every 401 of a sign-in
    expect(body, reason).toMatchObject({ error: "Invalid Sign-in-with-x signature", details: { reason } });
    out.push([body.code, body.details.reason]);
  }
  return out;
}

describe("emulator: a refused sign-in's code", () => {
  for (const [kind, make, otherChain] of KINDS) {
    it(`${kind}: live, each cause's own X402_SIGN_IN_* code; seed (mode or option), X402_INVALID_SIGN_IN for them all`, async () => {
      const wallet = make();
      const other = make();
      const live = await start();
      const expected = (await causes(live, wallet, other, otherChain)).map(([code, reason]) => [code, reason]);
      expect(await answers(live, wallet, other, otherChain)).toEqual(expected);
      for (const seed of [await start({ mode: "seed" }), await start({ x402: { signInCodes: "seed" } })]) {
        expect(await answers(seed, wallet, other, otherChain)).toEqual(expected.map(([, reason]) => ["X402_INVALID_SIGN_IN", reason]));
      }
      // and the option wins over the mode the other way too
      const liveInSeed = await start({ mode: "seed", x402: { signInCodes: "live" } });
      expect(await answers(liveInSeed, wallet, other, otherChain)).toEqual(expected);
    });
  }
});
