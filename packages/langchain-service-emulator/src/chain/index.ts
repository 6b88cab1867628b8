/**
 * The emulator's local EVM chain: ganache in-process on 127.0.0.1, one chain (Base's chain id 8453 by default)
 * serving every EVM slug of the crypto RPC proxy and x402 settlement. It installs an EIP-3009 "USD Coin" v2 token
 * (6 decimals) at the real USDC address on Base (`USDC_BASE`), funded on every deterministic account, so the default
 * money policy (real USDC only) pays against it unchanged; and a Multicall3-compatible contract at the canonical
 * address so viem/ethers multicall reads work; and a CREATE2 factory of minimal ERC-1271 smart accounts at
 * `SMART_ACCOUNT_FACTORY_ADDRESS` (smart-account.ts), so an agent's smart account signs in and pays here.
 *
 * ganache and solc are optional dependencies, so both are imported lazily: importing this module costs nothing.
 */
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Contract, Interface, JsonRpcProvider, Network, Wallet, getAddress, parseUnits } from "ethers";
import { BASE_CHAIN_ID, USDC_BASE } from "langchain-service";
import type { LocalChain } from "../types.js";
import { MULTICALL3_SOURCE, USDC_SOURCE } from "./contracts.js";
import { SMART_ACCOUNT_FACTORY_ADDRESS, SMART_ACCOUNT_SOURCE } from "./smart-account.js";

export { SMART_ACCOUNT_FACTORY_ADDRESS, SMART_ACCOUNT_FACTORY_ABI, SMART_ACCOUNT_ABI, ERC1271_MAGIC_VALUE } from "./smart-account.js";

export const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11";
/** where the test token lives: Circle's USDC address on Base */
export const USDC_ADDRESS = USDC_BASE;
export const DEFAULT_CHAIN_ID = BASE_CHAIN_ID;
export const DEFAULT_ACCOUNTS = 10;
/** test USDC minted to every account, in whole tokens */
export const DEFAULT_USDC_PER_ACCOUNT = 1_000_000;
export const USDC_NAME = "USD Coin";
export const USDC_VERSION = "2";
export const USDC_DECIMALS = 6;

/** Human-readable ABI of the local token (what tools, tests and the x402 facilitator need). */
export const USDC_ABI = [
  "function name() view returns (string)",
  "function version() view returns (string)",
  "function symbol() view returns (string)",
  "function decimals() view returns (uint8)",
  "function totalSupply() view returns (uint256)",
  "function balanceOf(address) view returns (uint256)",
  "function allowance(address owner, address spender) view returns (uint256)",
  "function owner() view returns (address)",
  "function DOMAIN_SEPARATOR() view returns (bytes32)",
  "function TRANSFER_WITH_AUTHORIZATION_TYPEHASH() view returns (bytes32)",
  "function RECEIVE_WITH_AUTHORIZATION_TYPEHASH() view returns (bytes32)",
  "function CANCEL_AUTHORIZATION_TYPEHASH() view returns (bytes32)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "function transfer(address to, uint256 value) returns (bool)",
  "function approve(address spender, uint256 value) returns (bool)",
  "function transferFrom(address from, address to, uint256 value) returns (bool)",
  "function mint(address to, uint256 value)",
  "function initialize(string name, string version, address owner, address[] holders, uint256 amountEach)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
  "function receiveWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)",
  "function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)",
  "event Transfer(address indexed from, address indexed to, uint256 value)",
  "event Approval(address indexed owner, address indexed spender, uint256 value)",
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
  "event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)",
] as const;

export const MULTICALL3_ABI = [
  "function aggregate((address target, bytes callData)[] calls) payable returns (uint256 blockNumber, bytes[] returnData)",
  "function tryAggregate(bool requireSuccess, (address target, bytes callData)[] calls) payable returns ((bool success, bytes returnData)[] returnData)",
  "function aggregate3((address target, bool allowFailure, bytes callData)[] calls) payable returns ((bool success, bytes returnData)[] returnData)",
  "function aggregate3Value((address target, bool allowFailure, uint256 value, bytes callData)[] calls) payable returns ((bool success, bytes returnData)[] returnData)",
  "function getBlockNumber() view returns (uint256)",
  "function getCurrentBlockTimestamp() view returns (uint256)",
  "function getEthBalance(address addr) view returns (uint256)",
  "function getChainId() view returns (uint256)",
] as const;

export interface CompiledContract {
  abi: unknown[];
  /** creation bytecode, 0x-prefixed */
  bytecode: string;
  /** runtime bytecode, 0x-prefixed */
  deployedBytecode: string;
}

export interface CompiledContracts {
  usdc: CompiledContract;
  multicall3: CompiledContract;
  smartAccountFactory: CompiledContract;
  solcVersion: string;
}

export interface LocalChainOptions {
  /** chain id served by eth_chainId and signed into transactions (default 8453, Base) */
  chainId?: number;
  /** deterministic funded accounts (default 10; the last one is the treasury) */
  accounts?: number;
  /** port (default 0: ephemeral); host is always 127.0.0.1 */
  port?: number;
  /** test USDC minted to each account, in whole tokens (default 1,000,000) */
  usdcPerAccount?: number;
  /** ETH given to each account, in whole ether (default ganache's 1000) */
  ethPerAccount?: number;
}

const SOLC_INPUT = {
  language: "Solidity",
  sources: {
    "TestUSDC.sol": { content: USDC_SOURCE },
    "Multicall3.sol": { content: MULTICALL3_SOURCE },
    "SmartAccount.sol": { content: SMART_ACCOUNT_SOURCE },
  },
  settings: {
    evmVersion: "paris",
    optimizer: { enabled: true, runs: 200 },
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
  },
};

/**
 * Compile once per process (memory), and once per machine (a file in the OS temp dir keyed by the sources'
 * hash): loading solc-js and compiling takes ~3 s, and every test worker would otherwise pay it again.
 */
let compiled: Promise<CompiledContracts> | undefined;

export function compileContracts(): Promise<CompiledContracts> {
  compiled ??= loadOrCompile().catch((error: unknown) => {
    compiled = undefined; // let a later call retry (e.g. after installing solc)
    throw error;
  });
  return compiled;
}

function cacheFile(): string {
  const hash = createHash("sha256").update(JSON.stringify(SOLC_INPUT)).digest("hex").slice(0, 16);
  return join(tmpdir(), "langchain-service-solc", `contracts-${hash}.json`);
}

async function loadOrCompile(): Promise<CompiledContracts> {
  const file = cacheFile();
  try {
    const cached = JSON.parse(await readFile(file, "utf8")) as CompiledContracts;
    const complete = [cached.usdc, cached.multicall3, cached.smartAccountFactory].every((c) => c?.deployedBytecode?.startsWith("0x"));
    if (complete) return cached;
  } catch {
    // no cache yet (or unreadable): compile below
  }
  const result = await compileNow();
  try {
    await mkdir(join(tmpdir(), "langchain-service-solc"), { recursive: true });
    const temp = `${file}.${process.pid}.tmp`;
    await writeFile(temp, JSON.stringify(result));
    await rename(temp, file); // atomic: concurrent workers never read half a file
  } catch {
    // a read-only temp dir only costs the next process a compile
  }
  return result;
}

async function compileNow(): Promise<CompiledContracts> {
  let solc: { compile(input: string): string; version(): string };
  try {
    solc = ((await import("solc")) as unknown as { default: typeof solc }).default;
  } catch (error) {
    throw new Error(`The local chain needs the optional dependency "solc" (npm i -D solc): ${(error as Error).message}`);
  }
  const output = JSON.parse(solc.compile(JSON.stringify(SOLC_INPUT))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts?: Record<
      string,
      Record<string, { abi: unknown[]; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>
    >;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join("\n")}`);
  const pick = (file: string, name: string): CompiledContract => {
    const c = output.contracts?.[file]?.[name];
    if (!c) throw new Error(`solc produced no ${name}`);
    return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}`, deployedBytecode: `0x${c.evm.deployedBytecode.object}` };
  };
  return {
    usdc: pick("TestUSDC.sol", "TestUSDC"),
    multicall3: pick("Multicall3.sol", "Multicall3"),
    smartAccountFactory: pick("SmartAccount.sol", "SmartAccountFactory"),
    solcVersion: solc.version(),
  };
}

interface GanacheServer {
  listen(port: number, host: string): Promise<void>;
  close(): Promise<void>;
  address(): AddressInfo;
  provider: {
    getInitialAccounts(): Record<string, { secretKey: string; balance: bigint; unlocked: boolean }>;
    request(args: { method: string; params?: unknown[] }): Promise<unknown>;
  };
}

/**
 * Starts ganache in-process, installs the token (at USDC_BASE) and Multicall3, and returns the chain's description.
 * Ready in about 1–2 s the first time (solc compile), well under a second after.
 */
export async function startLocalChain(options: LocalChainOptions = {}): Promise<LocalChain> {
  const chainId = options.chainId ?? DEFAULT_CHAIN_ID;
  const totalAccounts = options.accounts ?? DEFAULT_ACCOUNTS;
  if (!Number.isInteger(chainId) || chainId <= 0) throw new RangeError(`chainId must be a positive integer, got ${chainId}`);
  if (!Number.isInteger(totalAccounts) || totalAccounts < 2) throw new RangeError(`accounts must be an integer >= 2, got ${totalAccounts}`);

  const contractsPromise = compileContracts(); // compile while ganache boots
  let ganache: { server(options: Record<string, unknown>): GanacheServer };
  try {
    ganache = ((await import("ganache")) as unknown as { default: typeof ganache }).default;
  } catch (error) {
    throw new Error(`The local chain needs the optional dependency "ganache" (npm i -D ganache): ${(error as Error).message}`);
  }
  const server = ganache.server({
    chain: { chainId, networkId: chainId },
    wallet: {
      deterministic: true,
      totalAccounts,
      ...(options.ethPerAccount !== undefined ? { defaultBalance: options.ethPerAccount } : {}),
    },
    logging: { quiet: true },
    // no websockets: the proxy speaks plain HTTP JSON-RPC
    server: { ws: false },
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await server.close();
  };

  try {
    await server.listen(options.port ?? 0, "127.0.0.1");
    const port = server.address().port;
    const rpcUrl = `http://127.0.0.1:${port}`;
    const accounts = Object.entries(server.provider.getInitialAccounts()).map(([address, a]) => ({
      address: getAddress(address),
      privateKey: a.secretKey,
    }));
    const deployerKey = accounts[0]?.privateKey;
    const treasury = accounts[accounts.length - 1]?.address;
    if (!deployerKey || !treasury) throw new Error("ganache returned no accounts");

    const contracts = await contractsPromise;
    // Multicall3 lives at a fixed address on real chains: install its runtime code there directly.
    await server.provider.request({ method: "evm_setAccountCode", params: [MULTICALL3_ADDRESS, contracts.multicall3.deployedBytecode] });

    // The smart-account factory has no constructor and no state: its runtime code is all it needs.
    await server.provider.request({
      method: "evm_setAccountCode",
      params: [SMART_ACCOUNT_FACTORY_ADDRESS, contracts.smartAccountFactory.deployedBytecode],
    });

    // The token too, at the real USDC address: its runtime code has no constructor or immutables (the domain
    // separator follows `address(this)`), so one `initialize` call writes the state a deploy would have.
    await server.provider.request({ method: "evm_setAccountCode", params: [USDC_ADDRESS, contracts.usdc.deployedBytecode] });

    const provider = new JsonRpcProvider(rpcUrl, Network.from(chainId), { staticNetwork: true, batchMaxCount: 1, cacheTimeout: -1 });
    try {
      const deployer = new Wallet(deployerKey, provider);
      const amountEach = parseUnits(String(options.usdcPerAccount ?? DEFAULT_USDC_PER_ACCOUNT), USDC_DECIMALS);
      const token = new Contract(USDC_ADDRESS, USDC_ABI as unknown as string[], deployer);
      const init = await token.getFunction("initialize")(
        USDC_NAME,
        USDC_VERSION,
        deployer.address,
        accounts.map((a) => a.address),
        amountEach,
      );
      const receipt = await init.wait();
      if (receipt?.status !== 1) throw new Error("the local chain could not initialize its test USDC");
      const usdcAddress = getAddress(USDC_ADDRESS);
      return {
        rpcUrl,
        chainId,
        accounts,
        usdc: { address: usdcAddress, name: USDC_NAME, version: USDC_VERSION, symbol: "USDC", decimals: USDC_DECIMALS },
        treasury,
        smartAccountFactory: getAddress(SMART_ACCOUNT_FACTORY_ADDRESS),
        close,
      };
    } finally {
      provider.destroy();
    }
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}

/** An ethers `Interface` for the local token, for encoding calls and parsing its logs. */
export const usdcInterface = new Interface(USDC_ABI as unknown as string[]);
