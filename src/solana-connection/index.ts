/**
 * `langchain-service/solana-connection`: a `@solana/web3.js` 1.x `Connection` to the crypto RPC proxy, through the
 * client's fetch stack. Needs the optional peer `@solana/web3.js@^1.98`, imported here statically: the main entry
 * never names it, so a bundle of the main entry never has to resolve it.
 */
export { createSolanaConnection, type SolanaConnectionOptions } from "../crypto-rpc/solana-connection.js";
