/**
 * An in-process wallet-standard Solana wallet, shaped as a browser extension registers one (`Wallet` with
 * `accounts`, `standard:connect`, `solana:signMessage`, `solana:signTransaction`): its key stays in here, and it
 * signs what it is asked to with Ed25519, as Phantom or Solflare would once the user approves. `misbehave` makes it
 * do what a hostile or careless wallet does; `asked` records every call, so a test can tell it was never called.
 */
import { ed25519 } from "@noble/curves/ed25519";
import { getBase58Decoder, getTransactionDecoder, getTransactionEncoder, type Transaction } from "@solana/kit";

export interface TestWalletOptions {
  /** false: no account until `standard:connect` is asked (a wallet the page has not connected yet) */
  connected?: boolean;
  /** features to leave out */
  without?: string[];
  /** what the wallet does wrong */
  misbehave?: "prefix-message" | "rewrite-transaction" | "other-key";
}

export interface WalletAccountLike {
  address: string;
  publicKey: Uint8Array;
  chains: readonly string[];
  features: readonly string[];
}

/** 64 bytes (seed and public key) for a fresh Ed25519 key. */
export function randomSolanaKey(): Uint8Array {
  const seed = ed25519.utils.randomPrivateKey();
  const key = new Uint8Array(64);
  key.set(seed);
  key.set(ed25519.getPublicKey(seed), 32);
  return key;
}

export function testWalletStandardWallet(secretKey: Uint8Array, options: TestWalletOptions = {}) {
  const seed = secretKey.slice(0, 32);
  const publicKey = secretKey.slice(32);
  const address = getBase58Decoder().decode(publicKey);
  const signingSeed = options.misbehave === "other-key" ? randomSolanaKey().slice(0, 32) : seed;
  const asked: string[] = [];
  let connected = options.connected ?? true;
  const account: WalletAccountLike = Object.freeze({
    address,
    publicKey,
    chains: ["solana:mainnet", "solana:devnet"],
    features: ["solana:signMessage", "solana:signTransaction"],
  });
  const own = (who: { address: string }) => {
    if (who.address !== address) throw new Error(`unknown account ${who.address}`);
  };
  const features: Record<string, unknown> = {
    "standard:connect": {
      version: "1.0.0",
      async connect() {
        asked.push("standard:connect");
        connected = true;
        return { accounts: [account] };
      },
    },
    "solana:signMessage": {
      version: "1.0.0",
      async signMessage(...inputs: { account: WalletAccountLike; message: Uint8Array }[]) {
        asked.push("solana:signMessage");
        return inputs.map(({ account: who, message }) => {
          own(who);
          const signedMessage =
            options.misbehave === "prefix-message" ? new Uint8Array([...new TextEncoder().encode("Wallet: "), ...message]) : message;
          return { signedMessage, signature: ed25519.sign(signedMessage, signingSeed), signatureType: "ed25519" };
        });
      },
    },
    "solana:signTransaction": {
      version: "1.0.0",
      supportedTransactionVersions: ["legacy", 0],
      async signTransaction(...inputs: { account: WalletAccountLike; transaction: Uint8Array; chain?: string }[]) {
        asked.push(`solana:signTransaction ${inputs.map((i) => i.chain).join(",")}`);
        return inputs.map(({ account: who, transaction }) => {
          own(who);
          const tx = getTransactionDecoder().decode(transaction) as Transaction;
          const messageBytes = Uint8Array.from(tx.messageBytes);
          if (options.misbehave === "rewrite-transaction") {
            // as a wallet adding its own instruction or fee would: the bytes it signs are not the ones asked
            const at = messageBytes.length - 10;
            messageBytes[at] = messageBytes[at]! ^ 1;
          }
          const signatures = { ...tx.signatures, [address]: ed25519.sign(messageBytes, signingSeed) };
          return {
            signedTransaction: Uint8Array.from(getTransactionEncoder().encode({ messageBytes, signatures } as unknown as Transaction)),
          };
        });
      },
    },
  };
  for (const name of options.without ?? []) delete features[name];
  const wallet = {
    version: "1.0.0" as const,
    name: "Test Wallet",
    icon: "data:image/svg+xml;base64,PHN2Zy8+" as const,
    chains: ["solana:mainnet", "solana:devnet"],
    get accounts() {
      return connected ? [account] : [];
    },
    features,
  };
  return { wallet, account, address, asked };
}
