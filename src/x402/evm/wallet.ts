/**
 * `EvmWallet`: signs in (EIP-4361, built by viem) and pays (EIP-3009 through `@x402/evm`) with a raw key, an
 * ethers v6 `Signer`, a viem `Account` or an EIP-1193 provider. What holds the key stays in a private field: never
 * printed, serialized (toJSON / util.inspect show the address) or put in error messages.
 */
import { Wallet as EthersWallet, getAddress, isHexString, type Signer, type TypedDataField } from "ethers";
import { createWalletClient, custom } from "viem";
import { ConfigurationError } from "../../http/errors.js";
import type { PaymentDecision } from "../policy.js";
import type { SignedPayment, SignPaymentOptions } from "../payment.js";
import type { SiwxFields } from "../siwx.js";
import type { Eip1193Provider, TypedDataRequest, ViemAccountLike, X402Wallet } from "../wallets.js";
import { signEvmPayment } from "./payment.js";
import { formatEvmSiwxMessage } from "./siwe.js";

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
  return (
    !!v &&
    typeof v.address === "string" &&
    v.type === "local" &&
    typeof v.signMessage === "function" &&
    typeof v.signTypedData === "function"
  );
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
      throw new ConfigurationError(
        "EvmWallet: a viem JSON-RPC account signs through its wallet: use `await EvmWallet.fromEip1193(provider, address)`",
      );
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

  /** The EIP-4361 text of a sign-in (viem's `createSiweMessage`, which checks every field). */
  signInMessage(fields: SiwxFields): Promise<string> {
    return formatEvmSiwxMessage(fields);
  }

  /** Signs the payment the policy decided on (x402 v2 exact, or the legacy v1 form for a larger top-up). */
  signPayment(decision: PaymentDecision, options: SignPaymentOptions = {}): Promise<SignedPayment> {
    return signEvmPayment(this, decision, options);
  }

  toJSON() {
    return { kind: this.kind, address: this.address };
  }
  toString() {
    return `EvmWallet(${this.address})`;
  }
  // util.inspect's hook by its registered symbol: no node:util import, so the entry loads in a browser or worker
  [Symbol.for("nodejs.util.inspect.custom")]() {
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
