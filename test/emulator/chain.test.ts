/** `startEmulator({ chain: true })` starts the local chain lazily, exposes it, and closes it with the server. */
import { describe, expect, it } from "vitest";
import { startEmulator } from "langchain-service-emulator";

const rpc = (url: string, method: string) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: [] }),
  });

describe("emulator with a local chain", () => {
  it("starts the chain, exposes it on the handle and the context, and closes it", async () => {
    const emu = await startEmulator({ chain: true });
    let closed = false;
    try {
      expect(emu.chain).toBeDefined();
      expect(emu.context.chain).toBe(emu.chain);
      expect(emu.chain!.chainId).toBe(8453);
      expect(emu.chain!.usdc).toMatchObject({ name: "USD Coin", version: "2", decimals: 6 });
      const res = await rpc(emu.chain!.rpcUrl, "eth_chainId");
      expect((await res.json()).result).toBe("0x2105");
      const rpcUrl = emu.chain!.rpcUrl;
      await emu.close();
      closed = true;
      await expect(rpc(rpcUrl, "eth_chainId")).rejects.toThrow();
      await expect(fetch(`${emu.url}/models`)).rejects.toThrow();
    } finally {
      if (!closed) await emu.close();
    }
  });
});
