/**
 * The EIP-4361 (Sign-In with Ethereum) text of an EVM sign-in, by viem's `createSiweMessage`: it checks every field
 * (address checksum, domain, nonce of 8+ alphanumerics, URI, times) and imports nothing of Node's, where `siwe`
 * pulled `apg-js` and with it `Buffer`, which broke browser bundles.
 */
import { createSiweMessage } from "viem/siwe";
import type { SiwxFields } from "../siwx.js";

export async function formatEvmSiwxMessage(f: SiwxFields): Promise<string> {
  return createSiweMessage({
    domain: f.domain,
    address: f.address as `0x${string}`,
    statement: f.statement,
    uri: f.uri,
    version: "1",
    chainId: Number(f.chainId),
    nonce: f.nonce,
    issuedAt: new Date(f.issuedAt),
    expirationTime: f.expirationTime === undefined ? undefined : new Date(f.expirationTime),
  });
}
