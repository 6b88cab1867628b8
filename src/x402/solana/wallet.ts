/**
 * `SolanaWallet`: signs in (Ed25519 SIWX) and pays (a partially signed SPL transfer through `@x402/svm`) with a raw
 * Ed25519 key, a `@solana/kit` signer or a wallet-standard wallet. The key, or the signer, stays in a private field: never printed,
 * serialized (toJSON / util.inspect show the address) or put in error messages.
 */
import { ed25519 } from "@noble/curves/ed25519";
import { encodeBase58 } from "ethers";
import { createKeyPairSignerFromBytes } from "@solana/kit";
import { ConfigurationError } from "../../http/errors.js";
import { base58ToBytes } from "../encoding.js";
import type { PaymentDecision } from "../policy.js";
import type { SignedPayment, SignPaymentOptions } from "../payment.js";
import { formatSolanaSiwxMessage, type SiwxFields } from "../siwx.js";
import type { KitSignerLike, X402Wallet } from "../wallets.js";
import { signSvmPayment } from "./payment.js";
import { walletStandardSigner, type FromWalletStandardOptions, type WalletStandardWallet } from "./wallet-standard.js";

// Ed25519 from @noble/curves (audited, synchronous, every runtime): WebCrypto's Ed25519 is async only and missing
// in some browsers, and signBytes is synchronous

function isKitSigner(value: unknown): value is KitSignerLike {
  const v = value as Partial<KitSignerLike> | null;
  return !!v && typeof v === "object" && typeof v.address === "string" && typeof v.signMessages === "function";
}

/**
 * A Solana wallet from a 64-byte secret key (bytes, JSON array, base58), a `@solana/web3.js` Keypair, or a
 * `@solana/kit` message and transaction partial signer.
 */
export class SolanaWallet implements X402Wallet {
  readonly kind = "solana" as const;
  readonly address: string;
  readonly #secretKey: Uint8Array | undefined;
  readonly #signer: KitSignerLike | undefined;

  constructor(key: Uint8Array | number[] | string | { secretKey: Uint8Array } | KitSignerLike) {
    if (isKitSigner(key)) {
      if (typeof key.signTransactions !== "function") {
        throw new ConfigurationError("SolanaWallet: the kit signer must also sign transactions (a TransactionPartialSigner) to pay");
      }
      if (!base58ToBytes(key.address, 32)) {
        throw new ConfigurationError(`SolanaWallet: invalid signer address ${JSON.stringify(key.address.slice(0, 64))}`);
      }
      this.address = key.address;
      this.#signer = key;
      return;
    }
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
    if (bytes?.length !== 64) {
      throw new ConfigurationError(
        "SolanaWallet: expected a 64-byte secret key (Uint8Array, JSON array, base58 string), a @solana/web3.js Keypair or a @solana/kit signer",
      );
    }
    const derived = ed25519.getPublicKey(bytes.subarray(0, 32));
    const given = bytes.subarray(32);
    if (!derived.every((b, i) => b === given[i])) {
      throw new ConfigurationError("SolanaWallet: the secret key's public half does not match its seed");
    }
    this.#secretKey = Uint8Array.from(bytes);
    this.address = encodeBase58(derived);
  }

  /**
   * A wallet-standard wallet's account (a browser wallet: Phantom, Solflare, Backpack...): `solana:signMessage`
   * signs in, `solana:signTransaction` signs the payment. Refuses, before anything is asked of the wallet, one
   * that lacks either feature; without accounts it asks `standard:connect` (which may ask the user).
   */
  static async fromWalletStandard(wallet: WalletStandardWallet, options: FromWalletStandardOptions = {}): Promise<SolanaWallet> {
    return new SolanaWallet(await walletStandardSigner(wallet, options));
  }

  /** A fresh random wallet (tests, demos). */
  static random(): SolanaWallet {
    const secretKey = new Uint8Array(64);
    const seed = globalThis.crypto.getRandomValues(secretKey.subarray(0, 32));
    secretKey.set(ed25519.getPublicKey(seed), 32);
    return new SolanaWallet(secretKey);
  }

  get publicKeyBytes(): Uint8Array {
    return this.#secretKey ? this.#secretKey.slice(32) : base58ToBytes(this.address, 32)!;
  }

  /** Raw Ed25519 signature of the bytes, made here (a wallet over a kit signer signs with `signMessage`). */
  signBytes(data: Uint8Array): Uint8Array {
    if (!this.#secretKey) throw new ConfigurationError("SolanaWallet: this wallet's key is held by its signer; use signMessage");
    return ed25519.sign(data, this.#secretKey.subarray(0, 32));
  }

  /** base58 Ed25519 signature of the text (a SIWX sign-in). */
  async signMessage(message: string): Promise<string> {
    const content = new TextEncoder().encode(message);
    if (!this.#signer) return encodeBase58(this.signBytes(content));
    const [signatures] = await this.#signer.signMessages([{ content, signatures: {} }]);
    const signature = signatures?.[this.address];
    if (!(signature instanceof Uint8Array) || signature.length !== 64) {
      throw new ConfigurationError("SolanaWallet: the kit signer returned no 64-byte signature for its address");
    }
    return encodeBase58(signature);
  }

  /** The `@solana/kit` TransactionSigner `@x402/svm` pays with: the signer given, or a KeyPairSigner over the key. */
  async kitSigner(): Promise<unknown> {
    return this.#signer ?? createKeyPairSignerFromBytes(this.#secretKey!);
  }

  /** The Solana SIWX text of a sign-in (CAIP-122, as `@x402/extensions` formats it). */
  async signInMessage(fields: SiwxFields): Promise<string> {
    return formatSolanaSiwxMessage(fields);
  }

  /** Signs the payment the policy decided on (x402 v2 exact: a partially signed SPL transfer). */
  async signPayment(decision: PaymentDecision, options: SignPaymentOptions = {}): Promise<SignedPayment> {
    return signSvmPayment((await this.kitSigner()) as KitSignerLike, decision, options);
  }

  toJSON() {
    return { kind: this.kind, address: this.address };
  }
  toString() {
    return `SolanaWallet(${this.address})`;
  }
  // util.inspect's hook by its registered symbol: no node:util import, so the entry loads in a browser or worker
  [Symbol.for("nodejs.util.inspect.custom")]() {
    return this.toString();
  }
}
