/**
 * Every kind of signer a wallet takes: the same signatures as a raw key, SIWX headers that verify at the emulator's
 * checker, the key never in a string, JSON, inspection or error, and bad signers refused with a
 * `ConfigurationError` before any request. Pure (no server).
 */
import { inspect } from "node:util";
import { createPublicKey, generateKeyPairSync } from "node:crypto";
import { Wallet, getBytes } from "ethers";
import { privateKeyToAccount, toAccount } from "viem/accounts";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { describe, expect, it } from "vitest";
import { ConfigurationError } from "../../src/http/errors.js";
import type { Eip1193Provider, X402Wallet } from "../../src/x402/wallets.js";
import { EvmWallet } from "../../src/evm/index.js";
import { SolanaWallet } from "../../src/solana/index.js";
import { createSiwxHeader } from "../../src/x402/siwx.js";
import { NonceStore, verifySiwxHeader } from "../../packages/langchain-service-emulator/src/x402/siwx.js";
import type { EmulatorRequest } from "../../packages/langchain-service-emulator/src/types.js";
import { transferWithAuthorization } from "./helpers.js";

const KEY = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318";
const ADDRESS = new Wallet(KEY).address;
const ORIGIN = "http://127.0.0.1:4567";
const req: EmulatorRequest = {
  method: "POST",
  path: "/chat/completions",
  params: {},
  query: new URLSearchParams(),
  headers: {},
  body: Buffer.alloc(0),
  url: new URL(`${ORIGIN}/api/v1/chat/completions`),
};

/** An EIP-3009 authorization on Base's USDC. */
const TYPED = transferWithAuthorization(
  { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" },
  {
    from: ADDRESS as `0x${string}`,
    to: "0x9999999999999999999999999999999999999999",
    value: 5_000_000n,
    validAfter: 0n,
    validBefore: 2_000_000_000n,
    nonce: `0x${"ab".repeat(32)}`,
  },
);

function eip1193Over(key: string, asked: unknown[][] = []): Eip1193Provider {
  const wallet = new Wallet(key);
  return {
    async request({ method, params }) {
      const args = (params ?? []) as unknown[];
      asked.push([method, ...args]);
      if (method === "eth_accounts") return [];
      if (method === "eth_requestAccounts") return [wallet.address];
      if (method === "personal_sign") return wallet.signMessage(getBytes(args[0] as string));
      if (method === "eth_signTypedData_v4") {
        const { domain, types, message } = JSON.parse(args[1] as string) as {
          domain: Record<string, unknown>;
          types: Record<string, never>;
          message: Record<string, unknown>;
        };
        const { EIP712Domain: _, ...rest } = types;
        return wallet.signTypedData(domain, rest, message);
      }
      throw new Error(`unsupported ${method}`);
    },
  };
}

const local = privateKeyToAccount(KEY);
const evmKinds: [string, () => Promise<EvmWallet> | EvmWallet][] = [
  ["a raw key", () => new EvmWallet(KEY)],
  ["an ethers Signer", () => new EvmWallet(new Wallet(KEY))],
  ["a viem local Account", () => new EvmWallet(local)],
  [
    "a viem custom Account",
    () =>
      new EvmWallet(
        toAccount({
          address: local.address,
          signMessage: (a) => local.signMessage(a),
          signTypedData: (t) => local.signTypedData(t as never),
          signTransaction: (t) => local.signTransaction(t),
        }),
      ),
  ],
  ["an EIP-1193 provider", () => EvmWallet.fromEip1193(eip1193Over(KEY))],
];

function expectNoSecret(wallet: X402Wallet, secret: string) {
  for (const text of [
    String(wallet),
    JSON.stringify(wallet),
    inspect(wallet, { showHidden: true, depth: 8 }),
    JSON.stringify({ nested: wallet }),
  ]) {
    expect(text).not.toContain(secret);
    expect(text).toContain(wallet.address);
  }
}

describe("EVM signers", () => {
  for (const [kind, make] of evmKinds) {
    it(`${kind}: the raw key's address and signatures, a SIWX header the checker accepts, the key nowhere in its strings`, async () => {
      const wallet = await make();
      expect(wallet.address).toBe(ADDRESS);
      const reference = new Wallet(KEY);
      expect(await wallet.signMessage("hello")).toBe(await reference.signMessage("hello"));
      expect(await wallet.signTypedData(TYPED)).toBe(await reference.signTypedData(TYPED.domain, TYPED.types, TYPED.message));
      const header = await createSiwxHeader(wallet, `${ORIGIN}/api/v1/chat/completions`);
      await expect(verifySiwxHeader(header, req, new NonceStore(), Date.now())).resolves.toEqual({ address: ADDRESS, chain: "evm" });
      expectNoSecret(wallet, KEY.slice(2, 22));
    });
  }

  it("EIP-1193: eth_accounts first, then eth_requestAccounts; personal_sign of the hex text; v4 typed data with its domain type", async () => {
    const asked: unknown[][] = [];
    const wallet = await EvmWallet.fromEip1193(eip1193Over(KEY, asked));
    await wallet.signMessage("hi");
    await wallet.signTypedData(TYPED);
    expect(asked.map((a) => a[0])).toEqual(["eth_accounts", "eth_requestAccounts", "personal_sign", "eth_signTypedData_v4"]);
    expect(asked[2]).toEqual(["personal_sign", "0x6869", ADDRESS]);
    const v4 = JSON.parse(asked[3]![2] as string) as { types: Record<string, unknown>; message: { value: string } };
    expect(Object.keys(v4.types)).toContain("EIP712Domain");
    expect(v4.message.value).toBe("5000000");
    // an address given: no account request at all
    const given: unknown[][] = [];
    await EvmWallet.fromEip1193(eip1193Over(KEY, given), ADDRESS.toLowerCase());
    expect(given).toEqual([]);
  });

  it("bad signers are refused with a ConfigurationError before any request", async () => {
    const asked: unknown[][] = [];
    await expect(EvmWallet.fromEip1193({} as never)).rejects.toBeInstanceOf(ConfigurationError);
    await expect(EvmWallet.fromEip1193(eip1193Over(KEY, asked), "0x1234")).rejects.toBeInstanceOf(ConfigurationError);
    expect(asked).toEqual([]);
    const empty: Eip1193Provider = { request: async () => [] };
    await expect(EvmWallet.fromEip1193(empty)).rejects.toThrow(/no account/);
    expect(() => new EvmWallet({ address: ADDRESS, type: "json-rpc" } as never)).toThrow(/fromEip1193/);
    expect(() => new EvmWallet({ ...local, address: "0xnot" } as never)).toThrow(ConfigurationError);
    expect(() => new EvmWallet({ signMessage: () => "" } as never)).toThrow(ConfigurationError);
  });

  it("a signer's own failure comes through, and the key is not in it", async () => {
    const failing = new EvmWallet(
      toAccount({
        address: local.address,
        signMessage: async () => {
          throw new Error("KMS: access denied");
        },
        signTypedData: (t) => local.signTypedData(t as never),
        signTransaction: (t) => local.signTransaction(t),
      }),
    );
    const err = await createSiwxHeader(failing, ORIGIN).catch((e: unknown) => e);
    expect(String(err)).toContain("access denied");
    expect(String(err) + JSON.stringify(err)).not.toContain(KEY.slice(2, 22));
  });
});

/** 64 bytes: an Ed25519 seed and its public key. */
function secretKeyBytes(): Uint8Array {
  const { privateKey } = generateKeyPairSync("ed25519");
  const seed = privateKey.export({ format: "der", type: "pkcs8" }).subarray(16);
  const pub = createPublicKey(privateKey).export({ format: "der", type: "spki" }).subarray(12);
  return Uint8Array.from(Buffer.concat([seed, pub]));
}

describe("Solana signers", () => {
  it("a kit KeyPairSigner: the raw key's address and signature, a SIWX header the checker accepts, its key nowhere in its strings", async () => {
    const bytes = secretKeyBytes();
    const raw = new SolanaWallet(bytes);
    const kit = new SolanaWallet(await createKeyPairSignerFromBytes(bytes));
    expect(kit.address).toBe(raw.address);
    expect(await kit.signMessage("hello")).toBe(await raw.signMessage("hello"));
    expect(kit.publicKeyBytes).toEqual(raw.publicKeyBytes);
    const header = await createSiwxHeader(kit, ORIGIN);
    await expect(verifySiwxHeader(header, req, new NonceStore(), Date.now())).resolves.toEqual({ address: kit.address, chain: "solana" });
    expectNoSecret(kit, Buffer.from(bytes.subarray(0, 16)).toString("hex"));
    expect(inspect(kit)).toBe(`SolanaWallet(${kit.address})`);
    // the key is the signer's: nothing signs here synchronously
    expect(() => kit.signBytes(new Uint8Array(1))).toThrow(ConfigurationError);
  });

  it("bad kit signers are refused with a ConfigurationError", async () => {
    const signer = await createKeyPairSignerFromBytes(secretKeyBytes());
    expect(() => new SolanaWallet({ address: signer.address, signMessages: signer.signMessages } as never)).toThrow(/sign transactions/);
    expect(() => new SolanaWallet({ ...signer, address: "0OIl" } as never)).toThrow(ConfigurationError);
    const wrong = new SolanaWallet({ ...signer, signMessages: async () => [{}] } as never);
    await expect(wrong.signMessage("x")).rejects.toThrow(/no 64-byte signature/);
  });
});
