/**
 * Wallets that sign in (SIWX) and pay (x402): `EvmWallet` over ethers v6, `SolanaWallet` over an Ed25519 key.
 * Keys live in private fields only: they are never printed, serialized (toJSON / util.inspect show the address)
 * or put in error messages. Heavy payment modules (@x402/*, @solana/kit) load on first payment, not here.
 */
import { loadWalletPeer } from "./peers.js";
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign as nodeSign, type KeyObject } from "node:crypto";
import { Wallet as EthersWallet, getAddress, isHexString, encodeBase58, type Signer, type TypedDataField } from "ethers";
import { ConfigurationError } from "../http/errors.js";
import { base58ToBytes } from "./encoding.js";

export const BASE_MAINNET = "eip155:8453";
export const SOLANA_MAINNET = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
export const BASE_CHAIN_ID = 8453;

export type WalletKind = "evm" | "solana";

/** What the x402 layer needs from a wallet. */
export interface X402Wallet {
  readonly kind: WalletKind;
  readonly address: string;
  /** signs a text message: EIP-191 hex for EVM, base58 Ed25519 for Solana */
  signMessage(message: string): Promise<string>;
  toJSON(): { kind: WalletKind; address: string };
}

/** Typed-data signing as `@x402/evm`'s `ClientEvmSigner` wants it. */
export interface TypedDataRequest {
  domain: Record<string, unknown>;
  types: Record<string, unknown>;
  primaryType: string;
  message: Record<string, unknown>;
}

/** An EVM wallet from a private key (0x + 64 hex) or any ethers v6 `Signer`. */
export class EvmWallet implements X402Wallet {
  readonly kind = "evm" as const;
  readonly address: string;
  readonly #signer: Signer;

  /**
   * @param key a 0x-prefixed 32-byte private key, or an ethers Signer that knows its address synchronously
   *   (`Wallet`, `HDNodeWallet`); for any other Signer use `EvmWallet.fromSigner`.
   */
  constructor(key: string | (Signer & { address: string }), address?: string) {
    if (typeof key === "string") {
      // keys read from files and env lines often carry a newline or an uppercase 0X
      const trimmed = key.trim();
      const hex = /^0x/i.test(trimmed) ? `0x${trimmed.slice(2)}` : `0x${trimmed}`;
      if (!isHexString(hex, 32)) {
        throw new ConfigurationError("EvmWallet: the private key must be 32 bytes of hex (0x + 64 hex digits)");
      }
      let wallet: EthersWallet;
      try {
        wallet = new EthersWallet(hex);
      } catch {
        // ethers' message may quote the key: replace it
        throw new ConfigurationError("EvmWallet: not a valid secp256k1 private key");
      }
      this.#signer = wallet;
      this.address = wallet.address;
      return;
    }
    if (!key || typeof (key as Signer).signMessage !== "function" || typeof (key as Signer).signTypedData !== "function") {
      throw new ConfigurationError("EvmWallet: expected a private key string or an ethers v6 Signer");
    }
    const addr = address ?? (key as { address?: unknown }).address;
    if (typeof addr !== "string") {
      throw new ConfigurationError("EvmWallet: this Signer has no synchronous address; use `await EvmWallet.fromSigner(signer)`");
    }
    try {
      this.address = getAddress(addr);
    } catch {
      throw new ConfigurationError(`EvmWallet: invalid signer address ${JSON.stringify(addr)}`);
    }
    this.#signer = key;
  }

  /** Wraps any ethers v6 Signer (a browser or hardware signer resolves its address asynchronously). */
  static async fromSigner(signer: Signer): Promise<EvmWallet> {
    if (!signer || typeof signer.getAddress !== "function") {
      throw new ConfigurationError("EvmWallet.fromSigner: expected an ethers v6 Signer");
    }
    return new EvmWallet(signer as Signer & { address: string }, await signer.getAddress());
  }

  /** A fresh random wallet (tests, demos). */
  static random(): EvmWallet {
    return new EvmWallet(EthersWallet.createRandom().privateKey);
  }

  signMessage(message: string): Promise<string> {
    return this.#signer.signMessage(message);
  }

  /**
   * EIP-712 signing for `@x402/evm`. ethers derives the primary type from `types` and rejects the
   * `EIP712Domain` entry, so every other type is passed (passing only the primary type would break
   * nested types such as Permit2's witness).
   */
  signTypedData(request: TypedDataRequest): Promise<`0x${string}`> {
    const types: Record<string, TypedDataField[]> = {};
    for (const [name, fields] of Object.entries(request.types)) {
      if (name !== "EIP712Domain") types[name] = fields as TypedDataField[];
    }
    return this.#signer.signTypedData(request.domain, types, request.message) as Promise<`0x${string}`>;
  }

  toJSON() {
    return { kind: this.kind, address: this.address };
  }
  toString() {
    return `EvmWallet(${this.address})`;
  }
  [Symbol.for("nodejs.util.inspect.custom")]() {
    return this.toString();
  }
}

// PKCS#8 / SPKI prefixes for a raw Ed25519 key: Node's crypto signs and verifies Ed25519 natively, so a
// Solana signature needs no @solana/* module loaded (those load only to build a payment).
const ED25519_PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

export function ed25519PublicKeyObject(publicKey: Uint8Array): KeyObject {
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, publicKey]), format: "der", type: "spki" });
}

/** A Solana wallet from a 64-byte secret key (bytes, JSON array, base58) or a `@solana/web3.js` Keypair. */
export class SolanaWallet implements X402Wallet {
  readonly kind = "solana" as const;
  readonly address: string;
  readonly #secretKey: Uint8Array;
  readonly #privateKey: KeyObject;

  constructor(key: Uint8Array | number[] | string | { secretKey: Uint8Array }) {
    let bytes: Uint8Array | undefined;
    if (key instanceof Uint8Array) bytes = key;
    else if (Array.isArray(key)) bytes = Uint8Array.from(key);
    else if (typeof key === "string") {
      const trimmed = key.trim();
      if (trimmed.startsWith("[")) {
        try {
          bytes = Uint8Array.from(JSON.parse(trimmed) as number[]);
        } catch {
          bytes = undefined;
        }
      } else bytes = base58ToBytes(trimmed, 64);
    } else if (key && typeof key === "object" && (key as { secretKey?: unknown }).secretKey instanceof Uint8Array) {
      bytes = (key as { secretKey: Uint8Array }).secretKey;
    }
    if (!bytes || bytes.length !== 64) {
      throw new ConfigurationError(
        "SolanaWallet: expected a 64-byte secret key (Uint8Array, JSON array, base58 string) or a @solana/web3.js Keypair",
      );
    }
    const seed = bytes.subarray(0, 32);
    const privateKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: "der", type: "pkcs8" });
    const derived = createPublicKey(privateKey).export({ format: "der", type: "spki" }).subarray(ED25519_SPKI_PREFIX.length);
    if (!Buffer.from(bytes.subarray(32)).equals(derived)) {
      throw new ConfigurationError("SolanaWallet: the secret key's public half does not match its seed");
    }
    this.#secretKey = Uint8Array.from(bytes);
    this.#privateKey = privateKey;
    this.address = encodeBase58(derived);
  }

  /** A fresh random wallet (tests, demos). */
  static random(): SolanaWallet {
    const { privateKey } = generateKeyPairSync("ed25519");
    const seed = privateKey.export({ format: "der", type: "pkcs8" }).subarray(ED25519_PKCS8_PREFIX.length);
    const pub = createPublicKey(privateKey).export({ format: "der", type: "spki" }).subarray(ED25519_SPKI_PREFIX.length);
    return new SolanaWallet(Uint8Array.from(Buffer.concat([seed, pub])));
  }

  get publicKeyBytes(): Uint8Array {
    return this.#secretKey.slice(32);
  }

  /** Raw Ed25519 signature of the bytes. */
  signBytes(data: Uint8Array): Uint8Array {
    return new Uint8Array(nodeSign(null, data, this.#privateKey));
  }

  async signMessage(message: string): Promise<string> {
    return encodeBase58(this.signBytes(new TextEncoder().encode(message)));
  }

  /** A `@solana/kit` TransactionSigner for `@x402/svm` (loaded on first use). */
  async kitSigner(): Promise<unknown> {
    const kit = await loadWalletPeer("solana", () => import("@solana/kit"));
    return kit.createKeyPairSignerFromBytes(this.#secretKey);
  }

  toJSON() {
    return { kind: this.kind, address: this.address };
  }
  toString() {
    return `SolanaWallet(${this.address})`;
  }
  [Symbol.for("nodejs.util.inspect.custom")]() {
    return this.toString();
  }
}

export function isX402Wallet(value: unknown): value is X402Wallet {
  return value instanceof EvmWallet || value instanceof SolanaWallet;
}

/** The CAIP-2 network family a wallet can pay on. */
export function walletNamespace(wallet: X402Wallet): "eip155" | "solana" {
  return wallet.kind === "evm" ? "eip155" : "solana";
}
