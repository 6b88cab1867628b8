/**
 * The EIP-4361 text of a signer's later requests skips siwe's re-parse of its own output (about half the cost of
 * a header), and is still exactly what `new SiweMessage(fields).prepareMessage()` gives; what EIP-4361 refuses is
 * still refused on a signer's first text, and fields outside the formats checked go the full way.
 */
import { describe, expect, it } from "vitest";
import { SiweMessage } from "siwe";
import { siwxNonce } from "../../src/x402/siwx.js";
import { formatEvmSiwxMessage } from "../../src/x402/evm/siwe.js";
import { EvmWallet } from "../../src/evm/index.js";

describe("formatEvmSiwxMessage", () => {
  it("a signer's texts, first and later, equal siwe's fully checked text", async () => {
    const wallet = EvmWallet.random();
    for (let i = 0; i < 50; i++) {
      const issued = new Date(Date.UTC(2026, 10, 25, 12, 0, i, i * 7));
      const fields = {
        domain: "api.example.com:8443",
        uri: "https://api.example.com:8443",
        address: wallet.address,
        statement: "Sign in to the service",
        chainId: 8453,
        nonce: siwxNonce(),
        issuedAt: issued.toISOString(),
        expirationTime: new Date(issued.getTime() + 300_000).toISOString(),
      };
      const expected = new SiweMessage({ ...fields, version: "1" }).prepareMessage();
      expect(await formatEvmSiwxMessage(fields)).toBe(expected);
    }
  });

  it("what EIP-4361 refuses is refused (a bad address), and a nonce it does not allow is checked the full way", async () => {
    const base = {
      domain: "api.example.com",
      uri: "https://api.example.com",
      chainId: 8453,
      issuedAt: new Date().toISOString(),
      expirationTime: new Date(Date.now() + 1000).toISOString(),
    };
    await expect(formatEvmSiwxMessage({ ...base, address: "0xnot-an-address", nonce: siwxNonce() })).rejects.toThrow();
    const address = EvmWallet.random().address;
    await formatEvmSiwxMessage({ ...base, address, nonce: siwxNonce() }); // the signer is checked now
    await expect(formatEvmSiwxMessage({ ...base, address, nonce: "short" })).rejects.toThrow(); // not our format: full parse
  });
});
