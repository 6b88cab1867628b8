/**
 * A wallet-standard Solana wallet (Phantom, Solflare, Backpack... in a page, found through `getWallets()`) as a
 * `@solana/kit` message and transaction partial signer, the kind `SolanaWallet` and `@x402/svm` sign with.
 *
 * The wallet-standard types are written here by their shape (`@wallet-standard/base` and
 * `@solana/wallet-standard-features` define them; neither is a dependency, and a page's wallet object needs no
 * import to be one). `@solana/react`'s adapters return *modifying* signers, since a wallet may rewrite what it
 * signs; here a wallet may not: the sign-in text and the payment transaction are exactly what the service checks,
 * so a changed message or transaction, or a signature that does not verify for the account's key, is refused
 * before anything is sent.
 */
import { ed25519 } from "@noble/curves/ed25519";
import { getTransactionDecoder, getTransactionEncoder, type Transaction } from "@solana/kit";
import { ConfigurationError } from "../../http/errors.js";
import { base58ToBytes } from "../encoding.js";
import type { KitSignerLike } from "../wallets.js";

export const SOLANA_SIGN_MESSAGE = "solana:signMessage";
export const SOLANA_SIGN_TRANSACTION = "solana:signTransaction";
export const STANDARD_CONNECT = "standard:connect";

/** A wallet-standard `WalletAccount` (`@wallet-standard/base`). */
export interface WalletStandardAccount {
  readonly address: string;
  readonly publicKey: Uint8Array;
  readonly chains: readonly string[];
  readonly features: readonly string[];
  readonly label?: string;
  readonly icon?: string;
}

/** A wallet-standard `Wallet` (`@wallet-standard/base`) with the Solana features this package signs with. */
export interface WalletStandardWallet {
  readonly name?: string;
  readonly chains?: readonly string[];
  readonly accounts: readonly WalletStandardAccount[];
  readonly features: Readonly<Record<string, unknown>>;
}

export interface FromWalletStandardOptions {
  /** the account to sign with (its address, or the account itself); default: the wallet's first Solana account */
  account?: string | WalletStandardAccount;
  /** the wallet-standard chain given with each transaction; default `solana:mainnet` when the account has it */
  chain?: `solana:${string}`;
  /** without accounts, ask `standard:connect` for them (may ask the user); default true */
  connect?: boolean;
}

interface SignMessageFeature {
  signMessage(
    ...inputs: { account: WalletStandardAccount; message: Uint8Array }[]
  ): Promise<readonly { signedMessage: Uint8Array; signature: Uint8Array; signatureType?: string }[]>;
}
interface SignTransactionFeature {
  supportedTransactionVersions?: readonly ("legacy" | 0)[];
  signTransaction(
    ...inputs: { account: WalletStandardAccount; transaction: Uint8Array; chain?: string }[]
  ): Promise<readonly { signedTransaction: Uint8Array }[]>;
}
interface ConnectFeature {
  connect(input?: { silent?: boolean }): Promise<{ accounts: readonly WalletStandardAccount[] }>;
}

const WHO = "SolanaWallet.fromWalletStandard";

function feature<T>(wallet: WalletStandardWallet, name: string, method: string): T | undefined {
  const f = wallet.features[name] as Record<string, unknown> | undefined;
  return f && typeof f === "object" && typeof f[method] === "function" ? (f as T) : undefined;
}

function sameBytes(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The wallet's features, checked before anything is asked of it. */
function walletFeatures(wallet: WalletStandardWallet) {
  if (!wallet || typeof wallet !== "object" || !Array.isArray(wallet.accounts) || !wallet.features || typeof wallet.features !== "object") {
    throw new ConfigurationError(`${WHO}: expected a wallet-standard Wallet (an object with accounts and features)`);
  }
  const sign = feature<SignMessageFeature>(wallet, SOLANA_SIGN_MESSAGE, "signMessage");
  const pay = feature<SignTransactionFeature>(wallet, SOLANA_SIGN_TRANSACTION, "signTransaction");
  const missing = [sign ? "" : SOLANA_SIGN_MESSAGE, pay ? "" : SOLANA_SIGN_TRANSACTION].filter(Boolean);
  const name = JSON.stringify(String(wallet.name ?? "wallet").slice(0, 64));
  if (missing.length) {
    throw new ConfigurationError(
      `${WHO}: the wallet ${name} lacks ${missing.join(" and ")} (it must sign messages to sign in and transactions to pay)`,
    );
  }
  const versions = pay!.supportedTransactionVersions;
  if (Array.isArray(versions) && !versions.includes(0)) {
    throw new ConfigurationError(`${WHO}: the wallet ${name} cannot sign version 0 transactions (x402 pays with one)`);
  }
  return { sign: sign!, pay: pay!, connect: feature<ConnectFeature>(wallet, STANDARD_CONNECT, "connect"), name };
}

/** The account to sign with, checked: a Solana address whose public key is its own, with both features. */
async function chooseAccount(wallet: WalletStandardWallet, options: FromWalletStandardOptions, connect: ConnectFeature | undefined) {
  let accounts = wallet.accounts;
  if (accounts.length === 0 && connect && options.connect !== false) {
    accounts = (await connect.connect()).accounts ?? wallet.accounts;
  }
  const wanted = typeof options.account === "string" ? options.account : options.account?.address;
  const isSolana = (a: WalletStandardAccount) => Array.isArray(a?.chains) && a.chains.some((c) => c.startsWith("solana:"));
  const account = wanted !== undefined ? accounts.find((a) => a?.address === wanted) : accounts.find(isSolana);
  if (!account) {
    throw new ConfigurationError(
      wanted !== undefined
        ? `${WHO}: ${JSON.stringify(String(wanted).slice(0, 64))} is not one of the wallet's accounts`
        : `${WHO}: the wallet gave no Solana account${connect ? "" : " (and has no standard:connect to ask for one)"}`,
    );
  }
  const address = typeof account.address === "string" ? account.address : "";
  const key = base58ToBytes(address, 32);
  if (!key) throw new ConfigurationError(`${WHO}: the account's address is not a Solana address: ${JSON.stringify(address.slice(0, 64))}`);
  if (account.publicKey != null && !(account.publicKey instanceof Uint8Array && sameBytes(account.publicKey, key))) {
    throw new ConfigurationError(`${WHO}: the account's publicKey is not its address ${address}`);
  }
  if (!isSolana(account)) throw new ConfigurationError(`${WHO}: the account ${address} is on no Solana chain`);
  if (Array.isArray(account.features)) {
    const lacking = [SOLANA_SIGN_MESSAGE, SOLANA_SIGN_TRANSACTION].filter((f) => !account.features.includes(f));
    if (lacking.length) throw new ConfigurationError(`${WHO}: the account ${address} does not allow ${lacking.join(" and ")}`);
  }
  const chain =
    options.chain ?? (account.chains.includes("solana:mainnet") ? "solana:mainnet" : account.chains.find((c) => c.startsWith("solana:"))!);
  if (!account.chains.includes(chain)) throw new ConfigurationError(`${WHO}: the account ${address} is not on ${chain}`);
  return { account, address, key, chain };
}

/** A 64-byte Ed25519 signature of `bytes` by `key`, or a clear refusal. */
function checkedSignature(signature: unknown, bytes: Uint8Array, key: Uint8Array, what: string): Uint8Array {
  if (!(signature instanceof Uint8Array) || signature.length !== 64) {
    throw new ConfigurationError(`${WHO}: the wallet returned no 64-byte signature for the ${what}`);
  }
  if (!ed25519.verify(signature, bytes, key)) {
    throw new ConfigurationError(`${WHO}: the wallet's signature of the ${what} does not verify for its account`);
  }
  return Uint8Array.from(signature);
}

/**
 * A kit `MessagePartialSigner & TransactionPartialSigner` over the wallet's account. Checks the wallet and the
 * account first (no network call); `standard:connect` is asked only when the wallet has no account yet.
 */
export async function walletStandardSigner(wallet: WalletStandardWallet, options: FromWalletStandardOptions = {}): Promise<KitSignerLike> {
  const { sign, pay, connect } = walletFeatures(wallet);
  const { account, address, key, chain } = await chooseAccount(wallet, options, connect);
  return {
    address,
    async signMessages(messages, config?: { abortSignal?: AbortSignal }) {
      config?.abortSignal?.throwIfAborted();
      if (messages.length === 0) return [];
      const outputs = await sign.signMessage(...messages.map((m) => ({ account, message: Uint8Array.from(m.content) })));
      return messages.map((m, i) => {
        const out = outputs?.[i];
        // the wallet may prefix or rewrite a message; the service verifies the text it issued, so refuse it here
        if (!out || !(out.signedMessage instanceof Uint8Array) || !sameBytes(out.signedMessage, m.content)) {
          throw new ConfigurationError(`${WHO}: the wallet signed another message than the one asked`);
        }
        if (out.signatureType !== undefined && out.signatureType !== "ed25519") {
          throw new ConfigurationError(`${WHO}: the wallet's signature type is ${JSON.stringify(String(out.signatureType))}, not ed25519`);
        }
        return Object.freeze({ [address]: checkedSignature(out.signature, m.content, key, "message") });
      });
    },
    async signTransactions(transactions: readonly never[], config?: { abortSignal?: AbortSignal }) {
      config?.abortSignal?.throwIfAborted();
      const txs = transactions as readonly Transaction[];
      if (txs.length === 0) return [];
      const encoder = getTransactionEncoder();
      const decoder = getTransactionDecoder();
      const outputs = await pay.signTransaction(...txs.map((tx) => ({ account, chain, transaction: Uint8Array.from(encoder.encode(tx)) })));
      return txs.map((tx, i) => {
        const messageBytes = Uint8Array.from(tx.messageBytes);
        const signed = outputs?.[i]?.signedTransaction;
        let decoded: Transaction;
        try {
          decoded = decoder.decode(signed as Uint8Array);
        } catch {
          throw new ConfigurationError(`${WHO}: the wallet returned no signed transaction`);
        }
        // a partial signer adds its signature and nothing else: x402 pays exactly the transfer the service offered
        if (!sameBytes(decoded.messageBytes, messageBytes)) {
          throw new ConfigurationError(`${WHO}: the wallet changed the payment transaction before signing it`);
        }
        return Object.freeze({
          [address]: checkedSignature(decoded.signatures[address as keyof typeof decoded.signatures], messageBytes, key, "transaction"),
        });
      });
    },
  };
}
