/**
 * Bring your own Solana signer: `new SolanaWallet(signer)` with a `@solana/kit` signer signs in (Ed25519 SIWX) and
 * pays (a partially signed SPL transfer built by `@x402/svm`) against the emulator's LiteSVM, under the same rules
 * as a raw key: a burst of 402s pays once, a payee not allowed is refused before anything is signed. The kinds: a
 * raw key, a kit `KeyPairSigner`, a kit message and transaction partial signer whose key lives in a signing
 * service in another process, and a browser's wallet-standard wallet (`SolanaWallet.fromWalletStandard`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { generateKeyPairSync, createPublicKey } from "node:crypto";
import { startEmulator, type Emulator } from "langchain-service-emulator";
import { PaymentPolicyError } from "../../src/http/errors.js";
import { withX402, type PaymentEvent } from "../../src/x402/index.js";
import { SolanaWallet, type WalletStandardWallet } from "../../src/solana/index.js";
import { chatBody } from "./helpers.js";
import { startSigningService, type SigningService } from "./remote-signer.js";
import { testWalletStandardWallet } from "./wallet-standard-wallet.js";

let emu: Emulator;
let service: SigningService;
let payTo: string;

beforeAll(async () => {
  // the top-up route's own limit (10 a minute per IP) is off: four kinds read and pay it 13 times
  // (test/x402/route-limits.test.ts covers the limit)
  [emu, service] = await Promise.all([
    startEmulator({ rateLimits: { abuseMaxFailures: 10_000 }, x402: { routeLimits: false } }),
    startSigningService(),
  ]);
  const { accepts } = (await (await fetch(`${emu.url}/x402/top-up`, { method: "POST" })).json()) as {
    accepts: { network: string; payTo: string }[];
  };
  payTo = accepts.find((a) => a.network.startsWith("solana:"))!.payTo;
}, 60_000);
afterAll(async () => {
  service?.close();
  await emu?.close();
});

/** 64 bytes: an Ed25519 seed and its public key, as Solana keeps a secret key. */
function secretKeyBytes(): Uint8Array {
  const { privateKey } = generateKeyPairSync("ed25519");
  const seed = privateKey.export({ format: "der", type: "pkcs8" }).subarray(16);
  const pub = createPublicKey(privateKey).export({ format: "der", type: "spki" }).subarray(12);
  return Uint8Array.from(Buffer.concat([seed, pub]));
}

const kinds: [string, () => Promise<SolanaWallet> | SolanaWallet][] = [
  ["a raw secret key", () => new SolanaWallet(secretKeyBytes())],
  ["a kit KeyPairSigner", async () => new SolanaWallet(await createKeyPairSignerFromBytes(secretKeyBytes()))],
  ["a kit partial signer signing in another process", () => new SolanaWallet(service.solanaSigner)],
  [
    "a wallet-standard wallet (a browser's)",
    () => SolanaWallet.fromWalletStandard(testWalletStandardWallet(secretKeyBytes()).wallet as unknown as WalletStandardWallet),
  ],
];

function solanaFetch(wallet: SolanaWallet, events: PaymentEvent[], allowedPayees = [payTo]) {
  return withX402(fetch, {
    wallet,
    policy: { allowedPayees },
    solanaRpcUrl: `${emu.url}/x402/solana/rpc`,
    onPayment: (e) => events.push(e),
  });
}
const chat = (f: typeof fetch) =>
  f(`${emu.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: chatBody() });
const topUps = (address: string) => emu.account(address)?.entries.filter((e) => e.type === "TOP_UP") ?? [];

for (const [kind, make] of kinds) {
  describe(`Solana with ${kind}`, () => {
    let wallet: SolanaWallet;
    beforeAll(async () => {
      wallet = await make();
    });

    it("a payee not allowed is refused before anything is signed", async () => {
      const events: PaymentEvent[] = [];
      const err = await chat(solanaFetch(wallet, events, ["9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"])).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PaymentPolicyError);
      expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(0);
      expect(topUps(wallet.address)).toHaveLength(0);
    });

    it("10 concurrent requests: signed in, 1 payment of $5 credited, 10 answers", async () => {
      const events: PaymentEvent[] = [];
      const f = solanaFetch(wallet, events);
      const results = await Promise.all(Array.from({ length: 10 }, () => chat(f)));
      expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
      expect(events.filter((e) => e.type === "payment.signed")).toHaveLength(1);
      expect(topUps(wallet.address).map((e) => [e.amount, e.network])).toEqual([[5, "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"]]);
    });
  });
}

it("the remote signer signed every sign-in and the one payment transaction; its key never came here", async () => {
  const log = await service.log();
  // sign-ins (one per attempt, at least one per request) and the one payment, each asked of the service
  expect(log.filter((r) => r === "POST /solana/sign-message").length).toBeGreaterThanOrEqual(10);
  expect(log.filter((r) => r === "POST /solana/sign-transaction")).toHaveLength(1);
  expect(String(new SolanaWallet(service.solanaSigner))).toBe(`SolanaWallet(${service.solanaSigner.address})`);
});
