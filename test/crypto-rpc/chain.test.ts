import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Contract, JsonRpcProvider, Network, Signature, Wallet, hexlify, parseUnits, randomBytes } from "ethers";
import {
  MULTICALL3_ABI,
  MULTICALL3_ADDRESS,
  USDC_ABI,
  startLocalChain,
  usdcInterface,
} from "../../packages/langchain-service-emulator/src/chain/index.js";
import type { LocalChain } from "../../packages/langchain-service-emulator/src/types.js";
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from "../x402/helpers.js";

let chain: LocalChain;
let provider: JsonRpcProvider;

beforeAll(async () => {
  chain = await startLocalChain();
  provider = new JsonRpcProvider(chain.rpcUrl, Network.from(chain.chainId), { staticNetwork: true, batchMaxCount: 1, cacheTimeout: -1 });
});

afterAll(async () => {
  provider?.destroy();
  await chain?.close();
});

function wallet(i: number): Wallet {
  const a = chain.accounts[i];
  if (!a) throw new Error(`no account ${i}`);
  return new Wallet(a.privateKey, provider);
}

async function signAuthorization(
  from: Wallet,
  to: string,
  value: bigint,
  opts: { validAfter?: bigint; validBefore?: bigint; nonce?: string } = {},
) {
  const message = {
    from: from.address,
    to,
    value,
    validAfter: opts.validAfter ?? 0n,
    validBefore: opts.validBefore ?? BigInt(Math.floor(Date.now() / 1000) + 3600),
    nonce: opts.nonce ?? hexlify(randomBytes(32)),
  };
  const domain = { name: chain.usdc.name, version: chain.usdc.version, chainId: chain.chainId, verifyingContract: chain.usdc.address };
  const signature = await from.signTypedData(domain, TRANSFER_WITH_AUTHORIZATION_TYPES, message);
  return { message, signature };
}

describe("local chain", () => {
  it("describes itself: chain id 8453, funded deterministic accounts, treasury last, USDC metadata on chain", async () => {
    expect(chain.chainId).toBe(8453);
    expect((await provider.send("eth_chainId", [])) as string).toBe("0x2105");
    expect(chain.accounts).toHaveLength(10);
    expect(chain.treasury).toBe(chain.accounts[9]?.address);
    const usdc = new Contract(chain.usdc.address, USDC_ABI, provider);
    expect(await usdc.getFunction("name")()).toBe("USD Coin");
    expect(await usdc.getFunction("version")()).toBe("2");
    expect(await usdc.getFunction("symbol")()).toBe("USDC");
    expect(await usdc.getFunction("decimals")()).toBe(6n);
    for (const a of chain.accounts) {
      expect(await usdc.getFunction("balanceOf")(a.address)).toBe(parseUnits("1000000", 6));
      expect(await provider.getBalance(a.address)).toBeGreaterThan(0n);
    }
  });

  it("moves tokens with a plain transfer and emits Transfer", async () => {
    const alice = wallet(1);
    const bob = wallet(2);
    const usdc = new Contract(chain.usdc.address, USDC_ABI, alice);
    const before = (await usdc.getFunction("balanceOf")(bob.address)) as bigint;
    const tx = await usdc.getFunction("transfer")(bob.address, 1_500_000n);
    const receipt = await tx.wait();
    expect(receipt?.status).toBe(1);
    const parsed = receipt!.logs.map((l: { topics: string[]; data: string }) => usdcInterface.parseLog(l)).find((l: unknown) => l);
    expect(parsed?.name).toBe("Transfer");
    expect(parsed?.args[2]).toBe(1_500_000n);
    expect(await usdc.getFunction("balanceOf")(bob.address)).toBe(before + 1_500_000n);
  });

  it("settles transferWithAuthorization (v,r,s and packed bytes forms) and rejects a replayed nonce", async () => {
    const payer = wallet(3);
    const relayer = wallet(0); // anyone may submit the authorization
    const usdc = new Contract(chain.usdc.address, USDC_ABI, relayer);
    const treasuryBefore = (await usdc.getFunction("balanceOf")(chain.treasury)) as bigint;

    const { message, signature } = await signAuthorization(payer, chain.treasury, 5_000_000n);
    const sig = Signature.from(signature);
    const args = [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce] as const;
    const settle = usdc.getFunction("transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)");
    const receipt = await (await settle(...args, sig.v, sig.r, sig.s)).wait();
    expect(receipt?.status).toBe(1);
    const names = receipt!.logs.map((l: { topics: string[]; data: string }) => usdcInterface.parseLog(l)?.name);
    expect(names).toEqual(expect.arrayContaining(["Transfer", "AuthorizationUsed"]));
    expect(await usdc.getFunction("authorizationState")(payer.address, message.nonce)).toBe(true);
    expect(await usdc.getFunction("balanceOf")(chain.treasury)).toBe(treasuryBefore + 5_000_000n);

    // same authorization again: nonce already used
    await expect(settle.staticCall(...args, sig.v, sig.r, sig.s)).rejects.toThrow(/authorization is used or canceled/);

    // the packed-signature overload that x402 uses for 65-byte signatures
    const second = await signAuthorization(payer, chain.treasury, 1n);
    const packed = usdc.getFunction("transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)");
    const m = second.message;
    expect((await (await packed(m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, second.signature)).wait())?.status).toBe(1);
    await expect(packed.staticCall(m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce, second.signature)).rejects.toThrow(
      /used or canceled/,
    );
  });

  it("rejects expired, not-yet-valid, wrongly signed and overspending authorizations", async () => {
    const payer = wallet(4);
    const usdc = new Contract(chain.usdc.address, USDC_ABI, wallet(0));
    const packed = usdc.getFunction("transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)");
    const call = (a: Awaited<ReturnType<typeof signAuthorization>>) =>
      packed.staticCall(
        a.message.from,
        a.message.to,
        a.message.value,
        a.message.validAfter,
        a.message.validBefore,
        a.message.nonce,
        a.signature,
      );

    await expect(call(await signAuthorization(payer, chain.treasury, 1n, { validBefore: 1n }))).rejects.toThrow(/expired/);
    const future = BigInt(Math.floor(Date.now() / 1000) + 86_400);
    await expect(
      call(await signAuthorization(payer, chain.treasury, 1n, { validAfter: future, validBefore: future + 10n })),
    ).rejects.toThrow(/not yet valid/);
    const forged = await signAuthorization(wallet(5), chain.treasury, 1n);
    await expect(call({ ...forged, message: { ...forged.message, from: payer.address } })).rejects.toThrow(/invalid signature/);
    await expect(call(await signAuthorization(payer, chain.treasury, parseUnits("2000000", 6)))).rejects.toThrow(/exceeds balance/);
  });

  it("has a working Multicall3 at the canonical address", async () => {
    const multicall = new Contract(MULTICALL3_ADDRESS, MULTICALL3_ABI, provider);
    const a = chain.accounts[1]!.address;
    const results = (await multicall.getFunction("aggregate3").staticCall([
      { target: chain.usdc.address, allowFailure: false, callData: usdcInterface.encodeFunctionData("symbol") },
      { target: chain.usdc.address, allowFailure: false, callData: usdcInterface.encodeFunctionData("balanceOf", [a]) },
    ])) as { success: boolean; returnData: string }[];
    expect(results[0]?.success).toBe(true);
    expect(usdcInterface.decodeFunctionResult("symbol", results[0]!.returnData)[0]).toBe("USDC");
    expect(results[1]?.success).toBe(true);
    expect(await multicall.getFunction("getChainId")()).toBe(8453n);
  });
});
