/**
 * Wallets that sign in (SIWX) and pay (x402): `EvmWallet` over ethers v6, `SolanaWallet` over an Ed25519 key.
 * Keys live in private fields only: they are never printed, serialized (toJSON / util.inspect show the address)
 * or put in error messages. Heavy payment modules (@x402/*, @solana/kit) load on first payment, not here.
 */
import { loadWalletPeer } from "./peers.js";
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign as nodeSign, type KeyObject } from "node:crypto";
import { inspect } from "node:util";
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

/**
 * A viem `Account` that signs itself (`type: "local"`): `privateKeyToAccount`, or `toAccount({ address,
 * signMessage, signTypedData, signTransaction })` whose signing happens elsewhere (a KMS, CDP, Privy, Turnkey).
 * Structural, so the main entry needs no viem import; a viem `LocalAccount` fits it.
 */
export interface ViemAccountLike {
  readonly address: string;
  readonly type: "local";
  signMessage(args: { message: string }): Promise<string>;
  signTypedData(request: TypedDataRequest): Promise<string>;
}

/** An EIP-1193 provider (a browser wallet's `window.ethereum`, WalletConnect, an embedded wallet). */
export interface Eip1193Provider {
  request(args: { method: string; params?: unknown }): Promise<unknown>;
}

/** The two signatures an EVM wallet gives, whatever holds its key. */
interface EvmSigning {
  message(text: string): Promise<string>;
  typedData(request: TypedDataRequest): Promise<`0x${string}`>;
}

function ethersSigning(signer: Signer): EvmSigning {
  return {
    message: (text) => signer.signMessage(text),
    /**
     * ethers derives the primary type from `types` and rejects the `EIP712Domain` entry, so every other type is
     * passed (passing only the primary type would break nested types such as Permit2's witness).
     */
    typedData(request) {
      const types: Record<string, TypedDataField[]> = {};
      for (const [name, fields] of Object.entries(request.types)) {
        if (name !== "EIP712Domain") types[name] = fields as TypedDataField[];
      }
      return signer.signTypedData(request.domain, types, request.message) as Promise<`0x${string}`>;
    },
  };
}

function viemSigning(account: ViemAccountLike): EvmSigning {
  return {
    message: (text) => account.signMessage({ message: text }),
    typedData: (request) => account.signTypedData(request) as Promise<`0x${string}`>,
  };
}

function isEthersSigner(value: unknown): value is Signer {
  const v = value as Partial<Signer> | null;
  return !!v && typeof v.getAddress === "function" && typeof v.signMessage === "function" && typeof v.signTypedData === "function";
}

function isViemAccount(value: unknown): value is ViemAccountLike {
  const v = value as Partial<ViemAccountLike> | null;
  return !!v && typeof v.address === "string" && v.type === "local" && typeof v.signMessage === "function" && typeof v.signTypedData === "function";
}

function checkedAddress(addr: unknown, what: string): string {
  if (typeof addr !== "string") throw new ConfigurationError(`EvmWallet: ${what} has no address`);
  try {
    return getAddress(addr);
  } catch {
    throw new ConfigurationError(`EvmWallet: invalid ${what} address ${JSON.stringify(addr.slice(0, 64))}`);
  }
}

/**
 * An EVM wallet from a private key (0x + 64 hex), an ethers v6 `Signer`, a viem `Account` (local or custom), or
 * an EIP-1193 provider (`EvmWallet.fromEip1193`). The key, or whatever holds it, stays in a private field.
 */
export class EvmWallet implements X402Wallet {
  readonly kind = "evm" as const;
  readonly address: string;
  readonly #sign: EvmSigning;

  /**
   * @param key a 0x-prefixed 32-byte private key; a viem `Account` that signs itself (`privateKeyToAccount`,
   *   `toAccount`); or an ethers Signer that knows its address synchronously (`Wallet`, `HDNodeWallet`; for any
   *   other Signer use `EvmWallet.fromSigner`).
   */
  constructor(key: string | ViemAccountLike | (Signer & { address: string }), address?: string) {
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
      this.#sign = ethersSigning(wallet);
      this.address = wallet.address;
      return;
    }
    // an ethers Signer has getAddress(); a viem Account has none and says `type: "local"`
    if (isEthersSigner(key)) {
      const addr = address ?? (key as { address?: unknown }).address;
      if (typeof addr !== "string") {
        throw new ConfigurationError("EvmWallet: this Signer has no synchronous address; use `await EvmWallet.fromSigner(signer)`");
      }
      this.address = checkedAddress(addr, "signer");
      this.#sign = ethersSigning(key);
      return;
    }
    if (isViemAccount(key)) {
      this.address = checkedAddress(key.address, "account");
      this.#sign = viemSigning(key);
      return;
    }
    if ((key as { type?: unknown } | null)?.type === "json-rpc") {
      throw new ConfigurationError("EvmWallet: a viem JSON-RPC account signs through its wallet: use `await EvmWallet.fromEip1193(provider, address)`");
    }
    throw new ConfigurationError("EvmWallet: expected a private key string, a viem Account or an ethers v6 Signer");
  }

  /** Wraps any ethers v6 Signer (a browser or hardware signer resolves its address asynchronously). */
  static async fromSigner(signer: Signer): Promise<EvmWallet> {
    if (!isEthersSigner(signer)) {
      throw new ConfigurationError("EvmWallet.fromSigner: expected an ethers v6 Signer");
    }
    return new EvmWallet(signer as Signer & { address: string }, await signer.getAddress());
  }

  /**
   * An EIP-1193 provider's account, through viem's wallet client over a `custom` transport: `personal_sign` signs
   * in, `eth_signTypedData_v4` signs the EIP-3009 payment (viem adds the `EIP712Domain` type v4 wallets need).
   * Without `address`: the first of `eth_accounts`, else of `eth_requestAccounts` (which may ask the user).
   */
  static async fromEip1193(provider: Eip1193Provider, address?: string): Promise<EvmWallet> {
    if (!provider || typeof (provider as Partial<Eip1193Provider>).request !== "function") {
      throw new ConfigurationError("EvmWallet.fromEip1193: expected an EIP-1193 provider (an object with request())");
    }
    const chosen = address !== undefined ? checkedAddress(address, "provider") : await providerAccount(provider);
    const { createWalletClient, custom } = await loadWalletPeer("evm", () => import("viem"));
    const client = createWalletClient({ account: chosen as `0x${string}`, transport: custom(provider) });
    const account = {
      address: chosen,
      type: "local" as const,
      signMessage: ({ message }: { message: string }) => client.signMessage({ message }),
      signTypedData: (request: TypedDataRequest) => client.signTypedData(request as Parameters<typeof client.signTypedData>[0]),
    };
    return new EvmWallet(account);
  }

  /** A fresh random wallet (tests, demos). */
  static random(): EvmWallet {
    return new EvmWallet(EthersWallet.createRandom().privateKey);
  }

  /** EIP-191 signature of the text (a SIWX sign-in). */
  signMessage(message: string): Promise<string> {
    return this.#sign.message(message);
  }

  /** EIP-712 signature, as `@x402/evm`'s `ClientEvmSigner` asks for it (the EIP-3009 payment). */
  signTypedData(request: TypedDataRequest): Promise<`0x${string}`> {
    return this.#sign.typedData(request);
  }

  toJSON() {
    return { kind: this.kind, address: this.address };
  }
  toString() {
    return `EvmWallet(${this.address})`;
  }
  [inspect.custom]() {
    return this.toString();
  }
}

async function providerAccount(provider: Eip1193Provider): Promise<string> {
  for (const method of ["eth_accounts", "eth_requestAccounts"]) {
    const accounts = await provider.request({ method });
    if (Array.isArray(accounts) && accounts.length > 0) return checkedAddress(accounts[0], "provider");
  }
  throw new ConfigurationError("EvmWallet.fromEip1193: the provider gave no account (eth_accounts, eth_requestAccounts)");
}

// PKCS#8 / SPKI prefixes for a raw Ed25519 key: Node's crypto signs and verifies Ed25519 natively, so a
// Solana signature needs no @solana/* module loaded (those load only to build a payment).
const ED25519_PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

export function ed25519PublicKeyObject(publicKey: Uint8Array): KeyObject {
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, publicKey]), format: "der", type: "spki" });
}

/**
 * A `@solana/kit` signer that signs messages and transactions in place: a `KeyPairSigner`
 * (`generateKeyPairSigner`, `createKeyPairSignerFromBytes`), or any `MessagePartialSigner &
 * TransactionPartialSigner` (Privy, Turnkey, a remote signer). Structural: the main entry needs no kit import.
 */
export interface KitSignerLike {
  readonly address: string;
  signMessages(messages: readonly { content: Uint8Array; signatures: Readonly<Record<string, Uint8Array>> }[]): Promise<readonly Readonly<Record<string, Uint8Array>>[]>;
  signTransactions(transactions: readonly never[]): Promise<readonly Readonly<Record<string, Uint8Array>>[]>;
}

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
  readonly #privateKey: KeyObject | undefined;
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
    if (!bytes || bytes.length !== 64) {
      throw new ConfigurationError(
        "SolanaWallet: expected a 64-byte secret key (Uint8Array, JSON array, base58 string), a @solana/web3.js Keypair or a @solana/kit signer",
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
    return this.#secretKey ? this.#secretKey.slice(32) : base58ToBytes(this.address, 32)!;
  }

  /** Raw Ed25519 signature of the bytes, made here (a wallet over a kit signer signs with `signMessage`). */
  signBytes(data: Uint8Array): Uint8Array {
    if (!this.#privateKey) throw new ConfigurationError("SolanaWallet: this wallet's key is held by its signer; use signMessage");
    return new Uint8Array(nodeSign(null, data, this.#privateKey));
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

  /** The `@solana/kit` TransactionSigner `@x402/svm` pays with: the signer given, or one over the key (kit loaded on first use). */
  async kitSigner(): Promise<unknown> {
    if (this.#signer) return this.#signer;
    const kit = await loadWalletPeer("solana", () => import("@solana/kit"));
    return kit.createKeyPairSignerFromBytes(this.#secretKey!);
  }

  toJSON() {
    return { kind: this.kind, address: this.address };
  }
  toString() {
    return `SolanaWallet(${this.address})`;
  }
  [inspect.custom]() {
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
