/**
 * Smart accounts against the emulator, over loopback HTTP and its local chain (ganache): the chain's CREATE2 factory
 * gives an account its address before it exists; it signs in with EIP-1271 once deployed and with an ERC-6492
 * signature before; it tops up from its own USDC (the token asks the account, ERC-1271); a wrong signature is
 * refused with the live code, and a wrong payment credits nothing and moves nothing.
 *
 * Signatures are made here with viem from the owner's key (`signMessage`, `signTypedData`, wrapped with
 * `serializeErc6492Signature` while the account has no code) and sent as the client sends them: a SIGN-IN-WITH-X
 * header from `createSiwxHeader`, a top-up from `topUp`, through an `EvmWallet` whose address is the account's.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  encodeFunctionData,
  erc20Abi,
  hashMessage,
  http,
  parseAbi,
  serializeErc6492Signature,
  type Hex,
  type LocalAccount,
} from "viem";
import { generatePrivateKey, privateKeyToAccount, toAccount } from "viem/accounts";
import type { Emulator } from "langchain-service-emulator";
import { ServiceClient } from "../../src/client.js";
import { PaymentFailedError } from "../../src/http/errors.js";
import { createSiwxHeader, topUp } from "../../src/x402/index.js";
import { EvmWallet } from "../../src/evm/index.js";
import { probeRoute } from "../emulator/helpers.js";
import { startPaidEmulator, testPolicy, transferWithAuthorization, unpacedRoutes, usdcBalance } from "./helpers.js";

const FACTORY_ABI = parseAbi([
  "function createAccount(address owner, uint256 salt) returns (address)",
  "function getAddress(address owner, uint256 salt) view returns (address)",
]);
const ERC1271_ABI = parseAbi(["function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)"]);

let emu: Emulator;
let publicClient: ReturnType<typeof createPublicClient>;
let funder: ReturnType<typeof createWalletClient>;
let salt = 0n;

beforeAll(async () => {
  emu = await startPaidEmulator({ routes: [probeRoute], walletStartingUsd: 1, x402: { solana: false } });
  const chain = emu.chain!;
  const local = defineChain({
    id: chain.chainId,
    name: "local",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [chain.rpcUrl] } },
  });
  publicClient = createPublicClient({ chain: local, transport: http(chain.rpcUrl), pollingInterval: 20 });
  // not account 0: the facilitator pays gas from it
  funder = createWalletClient({
    chain: local,
    transport: http(chain.rpcUrl),
    account: privateKeyToAccount(chain.accounts[2]!.privateKey as Hex),
  });
});
afterAll(async () => {
  await emu?.close();
});

interface SmartAccount {
  owner: LocalAccount;
  address: Hex;
  factory: Hex;
  factoryData: Hex;
}

/** A fresh owner key and its account's counterfactual address (nothing deployed), funded with `usdc` test USDC. */
async function newAccount(usdc = 0n): Promise<SmartAccount> {
  const owner = privateKeyToAccount(generatePrivateKey());
  const factory = emu.chain!.smartAccountFactory as Hex;
  salt += 1n;
  const address = await publicClient.readContract({
    address: factory,
    abi: FACTORY_ABI,
    functionName: "getAddress",
    args: [owner.address, salt],
  });
  const factoryData = encodeFunctionData({ abi: FACTORY_ABI, functionName: "createAccount", args: [owner.address, salt] });
  // a counterfactual address holds tokens like any other
  if (usdc > 0n)
    await mined(
      funder.writeContract({
        address: emu.chain!.usdc.address as Hex,
        abi: erc20Abi,
        functionName: "transfer",
        args: [address, usdc],
        chain: null,
        account: funder.account!,
      }),
    );
  return { owner, address, factory, factoryData };
}

async function deploy(account: SmartAccount): Promise<void> {
  await mined(funder.sendTransaction({ to: account.factory, data: account.factoryData, chain: null, account: funder.account! }));
  expect(await publicClient.getCode({ address: account.address })).toMatch(/^0x[0-9a-f]{100,}$/);
}

async function mined(hash: Promise<Hex>): Promise<void> {
  const receipt = await publicClient.waitForTransactionReceipt({ hash: await hash });
  expect(receipt.status).toBe("success");
}

/** What signs for the account: the owner's key (or another), its signature ERC-6492-wrapped while undeployed. */
function accountSigner(account: SmartAccount, opts: { key?: LocalAccount; wrap: boolean }) {
  const key = opts.key ?? account.owner;
  const wrap = (signature: Hex) =>
    opts.wrap ? serializeErc6492Signature({ address: account.factory, data: account.factoryData, signature }) : signature;
  return {
    signMessage: async (message: string) => wrap(await key.signMessage({ message })),
    signTypedData: async (typed: Parameters<LocalAccount["signTypedData"]>[0]) => wrap(await key.signTypedData(typed)),
  };
}

/** The account as the package's wallet: `EvmWallet` takes a viem custom account whose signing is `accountSigner`. */
function smartWallet(account: SmartAccount, opts: { key?: LocalAccount; wrap: boolean }): EvmWallet {
  const signer = accountSigner(account, opts);
  return new EvmWallet(
    toAccount({
      address: account.address,
      signMessage: ({ message }) => signer.signMessage(message as string),
      signTypedData: (typed) => signer.signTypedData(typed as Parameters<LocalAccount["signTypedData"]>[0]),
      signTransaction: async () => {
        throw new Error("a smart account sends no raw transactions");
      },
    }),
  );
}

async function signIn(wallet: EvmWallet): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${emu.url}/probe/inference`, {
    method: "POST",
    headers: { "content-type": "application/json", "sign-in-with-x": await createSiwxHeader(wallet, emu.url) },
    body: JSON.stringify({ model: "emu-s", usd: 0 }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

function topUps(address: string) {
  return emu.account(address)?.entries.filter((e) => e.type === "TOP_UP") ?? [];
}

describe("the local chain's smart accounts", () => {
  it("the factory gives an address before deployment; the deployed account answers ERC-1271 for its owner only", async () => {
    const account = await newAccount();
    expect(await publicClient.getCode({ address: account.address })).toBeUndefined();
    await deploy(account);
    const hash = hashMessage("hello");
    const valid = await publicClient.readContract({
      address: account.address,
      abi: ERC1271_ABI,
      functionName: "isValidSignature",
      args: [hash, await account.owner.signMessage({ message: "hello" })],
    });
    expect(valid).toBe("0x1626ba7e");
    const other = privateKeyToAccount(generatePrivateKey());
    const invalid = await publicClient.readContract({
      address: account.address,
      abi: ERC1271_ABI,
      functionName: "isValidSignature",
      args: [hash, await other.signMessage({ message: "hello" })],
    });
    expect(invalid).toBe("0xffffffff");
  });

  it("USDC's transferWithAuthorization(..., bytes signature) takes the account's ERC-1271 signature, and reverts on another key's", async () => {
    const account = await newAccount(10_000_000n);
    await deploy(account);
    const usdc = emu.chain!.usdc;
    const to = emu.chain!.accounts[3]!.address as Hex;
    const authorization = (nonce: Hex) => ({ from: account.address, to, value: 1_000_000n, validAfter: 0n, validBefore: 2n ** 40n, nonce });
    const domain = { name: usdc.name, version: usdc.version, chainId: emu.chain!.chainId, verifyingContract: usdc.address as Hex };
    const sign = (key: LocalAccount, message: ReturnType<typeof authorization>) =>
      key.signTypedData(transferWithAuthorization(domain, message));
    const abi = parseAbi([
      "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
    ]);
    const send = (a: ReturnType<typeof authorization>, signature: Hex) =>
      funder.writeContract({
        address: usdc.address as Hex,
        abi,
        functionName: "transferWithAuthorization",
        args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, signature],
        chain: null,
        account: funder.account!,
      });

    const good = authorization(`0x${"11".repeat(32)}`);
    await mined(send(good, await sign(account.owner, good)));
    expect(await usdcBalance(emu, account.address)).toBe(9_000_000n);

    const forged = authorization(`0x${"22".repeat(32)}`);
    await expect(send(forged, await sign(privateKeyToAccount(generatePrivateKey()), forged))).rejects.toThrow(
      /FiatTokenV2: invalid signature/,
    );
    expect(await usdcBalance(emu, account.address)).toBe(9_000_000n);
  });
});

describe("sign-in from a smart account", () => {
  it("deployed: the owner's signature verifies through EIP-1271 and the account is the caller", async () => {
    const account = await newAccount();
    await deploy(account);
    const { status } = await signIn(smartWallet(account, { wrap: false }));
    expect(status).toBe(200);
    expect(emu.account(account.address)).toBeDefined();
  });

  it("not deployed: an ERC-6492 signature verifies (the factory call simulated), and nothing is deployed", async () => {
    const account = await newAccount();
    const { status } = await signIn(smartWallet(account, { wrap: true }));
    expect(status).toBe(200);
    expect(emu.account(account.address)).toBeDefined();
    expect(await publicClient.getCode({ address: account.address })).toBeUndefined();
  });

  it("deployed: another key's signature is refused with X402_SIGN_IN_INVALID_SIGNATURE", async () => {
    const account = await newAccount();
    await deploy(account);
    const { status, body } = await signIn(smartWallet(account, { wrap: false, key: privateKeyToAccount(generatePrivateKey()) }));
    expect(status).toBe(401);
    expect(body).toMatchObject({ code: "X402_SIGN_IN_INVALID_SIGNATURE", details: { reason: "invalid_signature" } });
    expect(emu.account(account.address)).toBeUndefined();
  });

  it("not deployed: another key's ERC-6492 signature is refused with X402_SIGN_IN_INVALID_SIGNATURE", async () => {
    const account = await newAccount();
    const { status, body } = await signIn(smartWallet(account, { wrap: true, key: privateKeyToAccount(generatePrivateKey()) }));
    expect(status).toBe(401);
    expect(body).toMatchObject({ code: "X402_SIGN_IN_INVALID_SIGNATURE", details: { reason: "invalid_signature" } });
    expect(await publicClient.getCode({ address: account.address })).toBeUndefined();
  });
});

describe("a top-up paid from a smart account", () => {
  const FIVE = 5_000_000n;

  function client(wallet: EvmWallet) {
    return new ServiceClient({ baseUrl: emu.url, wallet, abuseGuard: false, pacing: unpacedRoutes });
  }

  for (const deployed of [true, false]) {
    const kind = deployed ? "deployed (EIP-1271)" : "not deployed (ERC-6492: the facilitator deploys it from the allowed factory)";
    it(`${kind}: credited once, and the USDC moved from the account to the treasury on chain`, async () => {
      const account = await newAccount(20_000_000n);
      if (deployed) await deploy(account);
      const wallet = smartWallet(account, { wrap: !deployed });
      const treasuryBefore = await usdcBalance(emu, emu.chain!.treasury);
      const result = await topUp(client(wallet), 5, { wallet, policy: testPolicy(emu) });
      expect(result.amountUsd).toBe(5);
      expect(topUps(account.address).map((e) => e.amount)).toEqual([5]);
      expect(await usdcBalance(emu, account.address)).toBe(15_000_000n);
      expect((await usdcBalance(emu, emu.chain!.treasury)) - treasuryBefore).toBe(FIVE);
      // the account exists now either way (the facilitator deployed it to settle)
      expect(await publicClient.getCode({ address: account.address })).toMatch(/^0x[0-9a-f]{100,}$/);
    });

    it(`${deployed ? "deployed" : "not deployed"}: a payment signed by another key is refused (400), nothing credited or moved`, async () => {
      const account = await newAccount(20_000_000n);
      if (deployed) await deploy(account);
      const wallet = smartWallet(account, { wrap: !deployed, key: privateKeyToAccount(generatePrivateKey()) });
      const treasuryBefore = await usdcBalance(emu, emu.chain!.treasury);
      const err = (await topUp(client(wallet), 5, { wallet, policy: testPolicy(emu) }).catch((e: unknown) => e)) as PaymentFailedError & {
        status?: number;
        body?: any;
      };
      expect(err).toBeInstanceOf(PaymentFailedError);
      expect(err.status).toBe(400);
      expect(err.body).toMatchObject({ error: "PAYMENT_VERIFICATION_FAILED" });
      if (deployed) expect(err.body.details.reason).toMatch(/signature/);
      expect(topUps(account.address)).toEqual([]);
      expect(await usdcBalance(emu, account.address)).toBe(20_000_000n);
      expect(await usdcBalance(emu, emu.chain!.treasury)).toBe(treasuryBefore);
      // verified before settling: a wrong counterfactual signature deploys nothing either
      if (!deployed) expect(await publicClient.getCode({ address: account.address })).toBeUndefined();
    });
  }
});
