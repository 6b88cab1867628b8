/**
 * A minimal wallet-standard Solana wallet, registered as a browser extension registers one: on
 * `wallet-standard:register-wallet` (for apps already listening) and on `wallet-standard:app-ready` (for apps that
 * ask later). Its key stays in here; it signs messages and transactions with Ed25519 (@noble/curves), as Phantom
 * or Solflare would once the user approves. Whoever holds the wallet asks it to sign and never sees a key.
 */
import { ed25519 } from "@noble/curves/ed25519";
import { getBase58Decoder, getTransactionDecoder, getTransactionEncoder } from "@solana/kit";

/** Registers the wallet over a 64-byte Solana secret key (seed, then public key); returns its address. */
export function registerSolanaWallet(secretKey) {
  const key = Uint8Array.from(secretKey);
  const seed = key.slice(0, 32);
  const publicKey = key.slice(32);
  const address = getBase58Decoder().decode(publicKey);
  const chains = ["solana:mainnet", "solana:devnet"];
  const account = Object.freeze({ address, publicKey, chains, features: ["solana:signMessage", "solana:signTransaction"] });
  const own = (who) => {
    if (who?.address !== address) throw new Error(`unknown account ${who?.address}`);
  };
  const wallet = {
    version: "1.0.0",
    name: "Scenario Wallet",
    icon: "data:image/svg+xml;base64,PHN2Zy8+",
    chains,
    accounts: [account],
    features: {
      "standard:connect": { version: "1.0.0", connect: async () => ({ accounts: [account] }) },
      "solana:signMessage": {
        version: "1.0.0",
        signMessage: async (...inputs) =>
          inputs.map(({ account: who, message }) => {
            own(who);
            return { signedMessage: message, signature: ed25519.sign(message, seed), signatureType: "ed25519" };
          }),
      },
      "solana:signTransaction": {
        version: "1.0.0",
        supportedTransactionVersions: ["legacy", 0],
        signTransaction: async (...inputs) =>
          inputs.map(({ account: who, transaction }) => {
            own(who);
            const tx = getTransactionDecoder().decode(transaction);
            const signatures = { ...tx.signatures, [address]: ed25519.sign(tx.messageBytes, seed) };
            return { signedTransaction: Uint8Array.from(getTransactionEncoder().encode({ ...tx, signatures })) };
          }),
      },
    },
  };
  // the Wallet Standard's registration, as @wallet-standard/wallet's registerWallet does it
  const callback = ({ register }) => register(wallet);
  globalThis.dispatchEvent(new CustomEvent("wallet-standard:register-wallet", { detail: callback }));
  globalThis.addEventListener("wallet-standard:app-ready", ({ detail }) => callback(detail));
  return address;
}
