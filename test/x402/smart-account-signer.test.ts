/**
 * `smartAccountSigner`: a smart account as a viem custom account. Its input checked before anything loads or signs;
 * its signatures the owner's, ERC-6492-wrapped while the account has no code (as told, or as its client reads on
 * chain); and end to end against the emulator and its local chain: an agent whose wallet is the signer signs in and
 * tops up from an undeployed account (ERC-6492, the facilitator deploys it), then, deployed, signs in with EIP-1271.
 *
 * The wallet is `new EvmWallet(signer)`: the smart account's signer is a viem custom account, which it takes as it is.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createPublicClient,
  defineChain,
  encodeFunctionData,
  erc20Abi,
  http,
  isErc6492Signature,
  parseAbi,
  parseErc6492Signature,
  createWalletClient,
  type Hex,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { Emulator } from "langchain-service-emulator";
import { ServiceClient } from "../../src/client.js";
import { ConfigurationError } from "../../src/http/errors.js";
import { createSiwxHeader, topUp } from "../../src/x402/index.js";
import { EvmWallet, smartAccountSigner, type SmartAccountSigner } from "../../src/evm/index.js";
import { probeRoute } from "../emulator/helpers.js";
import { startPaidEmulator, testPolicy, unpacedRoutes, usdcBalance } from "./helpers.js";

const FACTORY_ABI = parseAbi([
  "function createAccount(address owner, uint256 salt) returns (address)",
  "function getAddress(address owner, uint256 salt) view returns (address)",
]);
const FACTORY = "0x0000000000000000000000000000000000006492";
const ACCOUNT = "0x1111111111111111111111111111111111111111";

describe("smartAccountSigner's input", () => {
  const owner = privateKeyToAccount(generatePrivateKey());
  const data = encodeFunctionData({ abi: FACTORY_ABI, functionName: "createAccount", args: [owner.address, 1n] });

  it.each([
    ["a bad address", { address: "0x1234", owner }, /address must be an EVM address/],
    ["no owner", { address: ACCOUNT }, /owner must be a viem Account/],
    ["a factory without its call", { address: ACCOUNT, owner, factory: FACTORY }, /factory and factoryData go together/],
    ["a call without its factory", { address: ACCOUNT, owner, factoryData: data }, /factory and factoryData go together/],
    ["a bad factory", { address: ACCOUNT, owner, factory: "factory", factoryData: data }, /factory must be an EVM address/],
    [
      "calldata that is not hex",
      { address: ACCOUNT, owner, factory: FACTORY, factoryData: "createAccount()" },
      /factoryData must be non-empty 0x hex/,
    ],
    ["undeployed with no way to deploy", { address: ACCOUNT, owner, deployed: false }, /needs factory and factoryData/],
    ["a deployed flag that is neither", { address: ACCOUNT, owner, deployed: "yes" }, /boolean or a client with getCode/],
  ])("refuses %s with a ConfigurationError that names no key", async (_name, options, message) => {
    const err = (() => {
      try {
        return smartAccountSigner(options as never);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigurationError);
    expect((err as Error).message).toMatch(message);
    expect(JSON.stringify(err) + String(err)).not.toMatch(/[0-9a-f]{64}/i);
  });

  it("is a viem custom account with the smart account's address; it refuses raw transactions", async () => {
    const signer = await smartAccountSigner({ address: ACCOUNT, owner, deployed: true });
    expect(signer).toMatchObject({ address: ACCOUNT, type: "local", source: "custom" });
    await expect(signer.signTransaction({ to: ACCOUNT, value: 1n, chainId: 8453, type: "eip1559" })).rejects.toBeInstanceOf(
      ConfigurationError,
    );
  });

  it("signs as the owner when deployed; wraps in ERC-6492 (factory, call, owner's signature) when not, or when unknown", async () => {
    const message = "hello";
    const plain = await owner.signMessage({ message });
    expect(
      await (await smartAccountSigner({ address: ACCOUNT, owner, factory: FACTORY, factoryData: data, deployed: true })).signMessage({
        message,
      }),
    ).toBe(plain);
    for (const deployed of [false, undefined]) {
      const wrapped = await (
        await smartAccountSigner({ address: ACCOUNT, owner, factory: FACTORY, factoryData: data, deployed })
      ).signMessage({ message });
      expect(isErc6492Signature(wrapped)).toBe(true);
      expect(parseErc6492Signature(wrapped)).toEqual({ address: FACTORY, data, signature: plain });
    }
  });
});

describe("smartAccountSigner against the emulator's chain", () => {
  let emu: Emulator;
  let publicClient: ReturnType<typeof createPublicClient>;

  beforeAll(async () => {
    emu = await startPaidEmulator({ routes: [probeRoute], walletStartingUsd: 0, x402: { solana: false } });
    const chain = emu.chain!;
    const local = defineChain({
      id: chain.chainId,
      name: "local",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [chain.rpcUrl] } },
    });
    publicClient = createPublicClient({ chain: local, transport: http(chain.rpcUrl), pollingInterval: 20 });
  });
  afterAll(async () => {
    await emu?.close();
  });

  /** `EvmWallet` takes the smart account's signer as it is: a viem custom account. */
  function walletOf(signer: SmartAccountSigner): EvmWallet {
    return new EvmWallet(signer);
  }

  async function signIn(wallet: EvmWallet): Promise<number> {
    const res = await fetch(`${emu.url}/probe/inference`, {
      method: "POST",
      headers: { "content-type": "application/json", "sign-in-with-x": await createSiwxHeader(wallet, emu.url) },
      body: JSON.stringify({ model: "emu-s", usd: 0.01 }),
    });
    await res.body?.cancel();
    return res.status;
  }

  it("an agent on an undeployed account signs in (ERC-6492), tops up (the account deployed to settle), then signs in with EIP-1271", async () => {
    const chain = emu.chain!;
    const owner = privateKeyToAccount(generatePrivateKey());
    const factory = chain.smartAccountFactory as Hex;
    const address = await publicClient.readContract({
      address: factory,
      abi: FACTORY_ABI,
      functionName: "getAddress",
      args: [owner.address, 7n],
    });
    const factoryData = encodeFunctionData({ abi: FACTORY_ABI, functionName: "createAccount", args: [owner.address, 7n] });
    // fund the counterfactual address with 20 test USDC
    const local = publicClient.chain!;
    const funder = createWalletClient({
      chain: local,
      transport: http(chain.rpcUrl),
      account: privateKeyToAccount(chain.accounts[4]!.privateKey as Hex),
    });
    const funded = await funder.writeContract({
      address: chain.usdc.address as Hex,
      abi: erc20Abi,
      functionName: "transfer",
      args: [address, 20_000_000n],
    });
    expect((await publicClient.waitForTransactionReceipt({ hash: funded })).status).toBe("success");

    const signer = await smartAccountSigner({ address, owner, factory, factoryData, deployed: publicClient });
    const wallet = walletOf(signer);
    // signed in, but no credit yet: the 402 of a known wallet
    expect(await signIn(wallet)).toBe(402);

    const client = new ServiceClient({ baseUrl: emu.url, wallet, abuseGuard: false, pacing: unpacedRoutes });
    const result = await topUp(client, 5, { wallet, policy: testPolicy(emu) });
    expect(result.amountUsd).toBe(5);
    expect(
      emu
        .account(address)
        ?.entries.filter((e) => e.type === "TOP_UP")
        .map((e) => e.amount),
    ).toEqual([5]);
    expect(await usdcBalance(emu, address)).toBe(15_000_000n);
    expect(await publicClient.getCode({ address })).toMatch(/^0x[0-9a-f]{100,}$/);

    // deployed now: the signer reads it and signs plainly, and the service checks it through EIP-1271
    const plain = await signer.signMessage({ message: "after" });
    expect(isErc6492Signature(plain)).toBe(false);
    expect(await signIn(wallet)).toBe(200);
  });
});
