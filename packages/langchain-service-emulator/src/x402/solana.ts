/**
 * The Solana side of the emulator, on LiteSVM (`litesvm`, an optional peer dependency): the real SVM runs
 * in-process, with the SPL Token program built in. No npm package runs a Solana JSON-RPC validator, so
 * this module is the small node around it:
 *
 * - `SolanaLedger`: a LiteSVM holding a test USDC mint at the real USDC mint address (`USDC_SOLANA`, so the
 *   default money policy pays it unchanged) and real SPL token accounts (written with `setAccount`
 *   in the Token program's own layouts), a JSON-RPC handler over it (`getAccountInfo`, `getLatestBlockhash`,
 *   `getTokenAccountBalance`, `getBalance`, `getSlot`, `getMinimumBalanceForRentExemption`, ...), and funding
 *   helpers. `startLiteSvmNode()` serves one on its own loopback port.
 * - `createSolanaRail(ctx)`: the x402 rail. `@x402/svm`'s facilitator (`ExactSvmScheme`) verifies and settles
 *   for real: it checks the client's partially signed v0 transaction (instruction layout, mint, payee token
 *   account, amount, fee-payer safety), then its signer here co-signs as fee payer, simulates in LiteSVM and
 *   sends with `svm.sendTransaction`: signatures, blockhash, balances and the transfer itself are the SVM's
 *   business, and a replayed transaction is refused by the SVM as already processed.
 *
 * The client's `ExactSvmScheme` needs an RPC for the mint and a blockhash: `POST /x402/solana/rpc`.
 * Any Solana wallet's associated token account is given test USDC (1,000,000) the first time the emulator
 * sees the wallet (sign-in, payment, or `POST /x402/solana/faucet {owner}`).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { SOLANA_MAINNET, USDC_SOLANA } from "langchain-service";
import type { EmulatorContext, EmulatorRequest, EmulatorResponse, Route } from "../types.js";
import type { Rail } from "./options.js";

const DECIMALS = 6;
export const SOLANA_STARTING_USDC_ATOMIC = 1_000_000n * 10n ** BigInt(DECIMALS);
const TRANSFER_CHECKED = 12;
const MINT_SIZE = 82;
const TOKEN_ACCOUNT_SIZE = 165;
const FEE_PAYER_LAMPORTS = 1_000n * 1_000_000_000n;
/** blocks a blockhash stays valid on Solana */
const BLOCKHASH_VALIDITY = 150n;

/** Thrown when `litesvm` cannot be loaded; its message is one line that says what to do. */
export class SolanaRailUnavailableError extends Error {
  override name = "SolanaRailUnavailableError";
}

export const LITESVM_MISSING_MESSAGE =
  "emulator: Solana x402 rail disabled: the optional peer dependency `litesvm` is not installed (npm i -D litesvm); the Base rail is unaffected";
/** The same notice when the local chain is off too: then no rail is left, and it must not say otherwise. */
export const LITESVM_MISSING_NO_RAIL_MESSAGE =
  "emulator: Solana x402 rail disabled: the optional peer dependency `litesvm` is not installed (npm i -D litesvm); without the local chain either, no payment rail is available: wallet top-ups are refused, API keys work";

type LiteSvmModule = typeof import("litesvm");
let liteSvmModule: Promise<LiteSvmModule> | undefined;

/** Loads `litesvm` lazily (a native addon, optional); a missing package becomes SolanaRailUnavailableError. */
export async function loadLiteSvm(importer?: () => Promise<unknown>): Promise<LiteSvmModule> {
  const load = async (importer: () => Promise<unknown>) => {
    let mod: unknown;
    try {
      mod = await importer();
    } catch (err) {
      const text = String((err as Error)?.message ?? err);
      if (/Cannot find (module|package)|ERR_MODULE_NOT_FOUND|MODULE_NOT_FOUND|\.node\b/.test(text)) {
        throw new SolanaRailUnavailableError(LITESVM_MISSING_MESSAGE);
      }
      throw err;
    }
    // CommonJS: the class is a named export, or under `default` depending on the loader
    const m = mod as { LiteSVM?: unknown; default?: { LiteSVM?: unknown } };
    const LiteSVM = m.LiteSVM ?? m.default?.LiteSVM;
    if (typeof LiteSVM !== "function") throw new SolanaRailUnavailableError(LITESVM_MISSING_MESSAGE);
    return { ...(m.default ?? {}), ...m, LiteSVM } as LiteSvmModule;
  };
  if (importer) return load(importer); // tests of the missing-package path
  if (!liteSvmModule) {
    liteSvmModule = load(() => import("litesvm"));
    liteSvmModule.catch(() => (liteSvmModule = undefined));
  }
  return liteSvmModule;
}

/**
 * The rail's other packages are optional peer dependencies of langchain-service (an API-key user installs
 * none of them): one that is missing turns the rail off, as a missing litesvm does, instead of failing the start.
 */
async function railImport<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const text = String((err as Error)?.message ?? err);
    const missing = /Cannot find (?:module|package) '([^']+)'/.exec(text)?.[1];
    if (!missing && !/ERR_MODULE_NOT_FOUND|MODULE_NOT_FOUND/.test(text)) throw err;
    throw new SolanaRailUnavailableError(
      `emulator: Solana x402 rail disabled: the optional peer dependency \`${missing ?? "?"}\` is not installed ` +
        "(the rail needs litesvm, @solana/kit, @solana-program/token, @x402/core and @x402/svm); the Base rail is unaffected",
    );
  }
}

type JsonRpcCall = { jsonrpc?: string; id?: unknown; method?: unknown; params?: unknown };
type JsonRpcAnswer = { jsonrpc: "2.0"; id: unknown; result?: unknown; error?: { code: number; message: string } };

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export interface SolanaLedger {
  /** the test USDC mint (6 decimals, SPL Token program), at the real USDC mint address */
  mint: string;
  /** answers one JSON-RPC call or a batch */
  rpc(body: unknown): Promise<JsonRpcAnswer | JsonRpcAnswer[]>;
  /** the associated token account of `owner` for the test USDC mint */
  tokenAccountOf(owner: string): Promise<string>;
  /** creates `owner`'s token account with `amount` test USDC if it does not exist yet; returns the account */
  ensureTokenAccount(owner: string, amount?: bigint): Promise<string>;
  /** mints `amount` more test USDC to `owner`'s token account (creating it) */
  mintTo(owner: string, amount: bigint): Promise<string>;
  /** token balance (atomic) of a token account; undefined when it does not exist */
  tokenBalance(account: string): bigint | undefined;
  /** sets an account's lamports (a system account when it does not exist) */
  setLamports(address: string, lamports: bigint): void;
  lamports(address: string): bigint;
  slot(): bigint;
  /** sends a fully signed transaction through the SVM; its refusals (AlreadyProcessed, ...) throw */
  sendTransaction(tx: object): string;
  /** LiteSVM itself, for tests that want to look deeper */
  svm: InstanceType<LiteSvmModule["LiteSVM"]>;
}

/** A LiteSVM with a test USDC mint, and a JSON-RPC front over it. */
export async function createSolanaLedger(options: { importer?: () => Promise<unknown> } = {}): Promise<SolanaLedger> {
  // litesvm first: without it the rail is off whatever else is installed (the packages below are optional peers too)
  const { LiteSVM } = await loadLiteSvm(options.importer);
  const [kit, token] = await railImport(() =>
    Promise.all([
      import("@solana/kit"),
      // a dependency of @x402/svm: the SPL Token program's layouts and ATA derivation
      import("@solana-program/token"),
    ]),
  );
  type Addr = ReturnType<typeof kit.address>;
  // litesvm bundles its own @solana/kit: the same runtime shapes, other nominal types
  const svm = new LiteSVM();
  const sv = svm as unknown as {
    getAccount(a: Addr): {
      exists: boolean;
      lamports?: bigint;
      data?: Uint8Array;
      programAddress?: string;
      executable?: boolean;
      space?: bigint;
    };
    setAccount(a: { address: Addr; lamports: bigint; data: Uint8Array; programAddress: Addr; executable: boolean; space: bigint }): void;
  };
  // the real USDC mint address: the mint has no authority (supply follows `setAccount`), so no key is needed
  const mint = kit.address(USDC_SOLANA);
  const b58dec = kit.getBase58Decoder();
  const b58enc = kit.getBase58Encoder();
  const b64dec = kit.getBase64Decoder();
  const b64enc = kit.getBase64Encoder();
  const mintCodec = token.getMintCodec();
  const tokenCodec = token.getTokenCodec();
  const tokenProgram = token.TOKEN_PROGRAM_ADDRESS;
  const rentToken = svm.minimumBalanceForRentExemption(BigInt(TOKEN_ACCOUNT_SIZE));
  const rentMint = svm.minimumBalanceForRentExemption(BigInt(MINT_SIZE));

  const readAccount = (address: string) => sv.getAccount(kit.address(address));
  const writeMint = (supply: bigint) =>
    sv.setAccount({
      address: mint,
      lamports: rentMint,
      data: Uint8Array.from(
        mintCodec.encode({ mintAuthority: null, supply, decimals: DECIMALS, isInitialized: true, freezeAuthority: null }) as Uint8Array,
      ),
      programAddress: tokenProgram,
      executable: false,
      space: BigInt(MINT_SIZE),
    });
  const supply = () => {
    const a = readAccount(mint);
    return a.exists && a.data ? mintCodec.decode(a.data).supply : 0n;
  };
  writeMint(0n);

  const tokenAccountOf = async (owner: string) =>
    (await token.findAssociatedTokenPda({ mint, owner: kit.address(owner), tokenProgram }))[0] as string;
  const tokenBalance = (account: string): bigint | undefined => {
    const a = readAccount(account);
    if (!a.exists || !a.data || a.programAddress !== tokenProgram || a.data.length !== TOKEN_ACCOUNT_SIZE) return undefined;
    return tokenCodec.decode(a.data).amount;
  };
  /** writes a token account in the Token program's layout; the mint's supply follows */
  const writeTokenAccount = (account: string, owner: string, amount: bigint) => {
    const before = tokenBalance(account) ?? 0n;
    sv.setAccount({
      address: kit.address(account),
      lamports: rentToken,
      data: Uint8Array.from(
        tokenCodec.encode({
          mint,
          owner: kit.address(owner),
          amount,
          delegate: null,
          state: token.AccountState.Initialized,
          isNative: null,
          delegatedAmount: 0n,
          closeAuthority: null,
        }) as Uint8Array,
      ),
      programAddress: tokenProgram,
      executable: false,
      space: BigInt(TOKEN_ACCOUNT_SIZE),
    });
    writeMint(supply() + amount - before);
  };
  const ensureTokenAccount = async (owner: string, amount = SOLANA_STARTING_USDC_ATOMIC) => {
    const account = await tokenAccountOf(owner);
    if (tokenBalance(account) === undefined) writeTokenAccount(account, owner, amount);
    return account;
  };
  const mintTo = async (owner: string, amount: bigint) => {
    const account = await tokenAccountOf(owner);
    writeTokenAccount(account, owner, (tokenBalance(account) ?? 0n) + amount);
    return account;
  };
  const lamports = (address: string) => BigInt(readAccount(address).lamports ?? 0n);
  const setLamports = (address: string, value: bigint) => {
    const a = readAccount(address);
    sv.setAccount({
      address: kit.address(address),
      lamports: value,
      data: a.exists && a.data ? a.data : new Uint8Array(),
      programAddress: kit.address(a.exists && a.programAddress ? a.programAddress : "11111111111111111111111111111111"),
      executable: a.exists ? Boolean(a.executable) : false,
      space: a.exists && a.data ? BigInt(a.data.length) : 0n,
    });
  };
  const slot = () => svm.getClock().slot;
  const context = () => ({ slot: Number(slot()), apiVersion: "2.2.0" });

  // --- JSON-RPC -----------------------------------------------------------------------------------------
  const addressParam = (params: unknown[], i = 0): string => {
    const v = params[i];
    if (typeof v !== "string") throw new RpcError(-32602, `Invalid params: expected a base58 address at position ${i}`);
    try {
      return kit.address(v);
    } catch {
      throw new RpcError(-32602, `Invalid param: Invalid`);
    }
  };
  const configOf = (params: unknown[], i: number) =>
    params[i] && typeof params[i] === "object" ? (params[i] as Record<string, unknown>) : {};
  const encodeData = (data: Uint8Array, encoding: unknown): unknown => {
    if (encoding === "base58") return [b58dec.decode(data), "base58"];
    if (encoding === undefined || encoding === "binary") return b58dec.decode(data); // the legacy default
    // base64, and jsonParsed falls back to base64 for data it does not parse
    return [b64dec.decode(data), "base64"];
  };
  const accountValue = (address: string, encoding: unknown) => {
    const a = readAccount(address);
    if (!a.exists) return null;
    const data = a.data ?? new Uint8Array();
    return {
      data: encodeData(data, encoding),
      executable: Boolean(a.executable),
      lamports: Number(a.lamports ?? 0n),
      owner: a.programAddress,
      // u64::MAX, as the RPC sends it; a JSON number past 2^53 rounds, so this is what a client reads anyway
      rentEpoch: Number(2n ** 64n - 1n),
      space: data.length,
    };
  };
  const decodeTx = (wire: string, encoding: unknown) => {
    try {
      const bytes = encoding === "base64" ? b64enc.encode(wire) : b58enc.encode(wire);
      return kit.getTransactionDecoder().decode(bytes);
    } catch {
      throw new RpcError(-32602, "invalid transaction: failed to deserialize");
    }
  };
  const uiAmount = (amount: bigint) => ({
    amount: amount.toString(),
    decimals: DECIMALS,
    uiAmount: Number(amount) / 10 ** DECIMALS,
    uiAmountString: (Number(amount) / 10 ** DECIMALS).toString(),
  });

  async function call(method: string, params: unknown[]): Promise<unknown> {
    switch (method) {
      case "getAccountInfo":
        return { context: context(), value: accountValue(addressParam(params), configOf(params, 1).encoding) };
      case "getMultipleAccounts": {
        const list = params[0];
        if (!Array.isArray(list)) throw new RpcError(-32602, "Invalid params: expected an array of addresses");
        const encoding = configOf(params, 1).encoding;
        return { context: context(), value: list.map((_, i) => accountValue(addressParam(list, i), encoding)) };
      }
      case "getBalance":
        return { context: context(), value: Number(lamports(addressParam(params))) };
      case "getTokenAccountBalance": {
        const amount = tokenBalance(addressParam(params));
        if (amount === undefined) throw new RpcError(-32602, "Invalid param: could not find account");
        return { context: context(), value: uiAmount(amount) };
      }
      case "getTokenSupply": {
        if (addressParam(params) !== mint) throw new RpcError(-32602, "Invalid param: not a Token mint");
        return { context: context(), value: uiAmount(supply()) };
      }
      case "getLatestBlockhash":
        return {
          context: context(),
          value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: Number(slot() + BLOCKHASH_VALIDITY) },
        };
      case "isBlockhashValid":
        return { context: context(), value: params[0] === svm.latestBlockhash() };
      case "getSlot":
      case "getBlockHeight":
        return Number(slot());
      case "getBlockTime":
        return Number(svm.getClock().unixTimestamp);
      case "getMinimumBalanceForRentExemption": {
        const size = params[0];
        if (typeof size !== "number" || !Number.isInteger(size) || size < 0)
          throw new RpcError(-32602, "Invalid params: expected a data length");
        return Number(svm.minimumBalanceForRentExemption(BigInt(size)));
      }
      case "getHealth":
        return "ok";
      case "getVersion":
        return { "solana-core": "2.2.0", "feature-set": 0 };
      case "getGenesisHash":
        // the network this LiteSVM stands in for (its x402 CAIP-2 id is solana:<first 32 chars>)
        return "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuqCjT5rUX1";
      case "getEpochInfo": {
        const clock = svm.getClock();
        return {
          absoluteSlot: Number(clock.slot),
          blockHeight: Number(clock.slot),
          epoch: Number(clock.epoch),
          slotIndex: 0,
          slotsInEpoch: 432_000,
          transactionCount: null,
        };
      }
      case "getSignatureStatuses": {
        const list = params[0];
        if (!Array.isArray(list)) throw new RpcError(-32602, "Invalid params: expected an array of signatures");
        return {
          context: context(),
          value: list.map((s) => {
            const meta = typeof s === "string" ? svm.getTransaction(s as Parameters<typeof svm.getTransaction>[0]) : null;
            if (!meta) return null;
            const failed = typeof (meta as { err?: unknown }).err === "function";
            return {
              slot: Number(slot()),
              confirmations: null,
              err: failed ? { InstructionError: String((meta as { toString(): string }).toString()) } : null,
              confirmationStatus: "finalized",
            };
          }),
        };
      }
      case "requestAirdrop": {
        const to = addressParam(params);
        const amount = params[1];
        if (typeof amount !== "number" || !Number.isSafeInteger(amount) || amount <= 0)
          throw new RpcError(-32602, "Invalid params: expected lamports");
        const result = svm.airdrop(to as Parameters<typeof svm.airdrop>[0], BigInt(amount) as Parameters<typeof svm.airdrop>[1]);
        if (!result || typeof (result as { err?: unknown }).err === "function") throw new RpcError(-32002, "airdrop failed");
        return b58dec.decode((result as { signature(): Uint8Array }).signature());
      }
      case "sendTransaction":
      case "simulateTransaction": {
        if (typeof params[0] !== "string") throw new RpcError(-32602, "Invalid params: expected an encoded transaction");
        const cfg = configOf(params, 1);
        const tx = decodeTx(params[0], cfg.encoding);
        if (method === "simulateTransaction") {
          const r = svm.simulateTransaction(tx as unknown as Parameters<typeof svm.simulateTransaction>[0]);
          const failed = "err" in r && typeof r.err === "function";
          const meta = failed
            ? (r as { meta(): { logs(): string[]; computeUnitsConsumed(): bigint } }).meta()
            : (r as { meta(): { logs(): string[]; computeUnitsConsumed(): bigint } }).meta();
          return {
            context: context(),
            value: { err: failed ? String(r.toString()) : null, logs: meta.logs(), unitsConsumed: Number(meta.computeUnitsConsumed()) },
          };
        }
        return sendToSvm(tx);
      }
      default:
        throw new RpcError(-32601, "Method not found");
    }
  }

  /** Sends a decoded transaction through the SVM; its failures (AlreadyProcessed, InsufficientFunds...) throw. */
  function sendToSvm(tx: object): string {
    const r = svm.sendTransaction(tx as unknown as Parameters<typeof svm.sendTransaction>[0]);
    if ("err" in r && typeof r.err === "function") {
      const logs = (r as { meta(): { logs(): string[] } }).meta().logs();
      throw new RpcError(
        -32002,
        `Transaction failed: ${r.toString().slice(0, 300)}${logs.length ? ` | ${logs.slice(-3).join(" | ")}` : ""}`,
      );
    }
    // a new slot for the next transaction (the blockhash stays valid, as within 150 real blocks)
    svm.warpToSlot(slot() + 1n);
    return b58dec.decode((r as { signature(): Uint8Array }).signature());
  }

  async function one(c: JsonRpcCall): Promise<JsonRpcAnswer> {
    const id = c && typeof c === "object" && "id" in c ? (c.id ?? null) : null;
    if (!c || typeof c !== "object" || typeof c.method !== "string") {
      return { jsonrpc: "2.0", id, error: { code: -32600, message: "Invalid request" } };
    }
    try {
      const params = Array.isArray(c.params) ? (c.params as unknown[]) : [];
      return { jsonrpc: "2.0", id, result: await call(c.method, params) };
    } catch (err) {
      if (err instanceof RpcError) return { jsonrpc: "2.0", id, error: { code: err.code, message: err.message } };
      return {
        jsonrpc: "2.0",
        id,
        error: { code: -32603, message: `Internal error: ${String((err as Error)?.message ?? err).slice(0, 200)}` },
      };
    }
  }

  return {
    mint,
    svm,
    async rpc(body) {
      if (Array.isArray(body)) {
        if (body.length === 0) return { jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid request: empty batch" } };
        const out: JsonRpcAnswer[] = [];
        for (const c of body) out.push(await one(c as JsonRpcCall)); // in order: the SVM is sequential anyway
        return out;
      }
      return one(body as JsonRpcCall);
    },
    tokenAccountOf,
    ensureTokenAccount,
    mintTo,
    tokenBalance,
    setLamports,
    lamports,
    slot,
    sendTransaction: sendToSvm,
  };
}

function parseBody(raw: Buffer | string): { ok: true; body: unknown } | { ok: false } {
  try {
    return { ok: true, body: JSON.parse(typeof raw === "string" ? raw : raw.toString("utf8")) };
  } catch {
    return { ok: false };
  }
}
const PARSE_ERROR: JsonRpcAnswer = { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } };

export interface LiteSvmNode {
  url: string;
  ledger: SolanaLedger;
  close(): Promise<void>;
}

/**
 * A LiteSVM-backed Solana JSON-RPC node on its own loopback port (e.g. a `solana-devnet` upstream in tests).
 * `lamports` seeds system accounts.
 */
export async function startLiteSvmNode(options: { lamports?: Record<string, bigint | number> } = {}): Promise<LiteSvmNode> {
  const ledger = await createSolanaLedger();
  for (const [address, value] of Object.entries(options.lamports ?? {})) ledger.setLamports(address, BigInt(value));
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const parsed = parseBody(Buffer.concat(chunks));
      const answer = parsed.ok ? ledger.rpc(parsed.body) : Promise.resolve(PARSE_ERROR);
      void answer.then((a) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(a));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, ledger, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

export interface SolanaRail extends Rail {
  mint: string;
  payTo: string;
  feePayer: string;
  ledger: SolanaLedger;
  /** token balance (atomic) of an owner's associated token account (0 when it has none) */
  balanceOf(owner: string): Promise<bigint>;
  /** the facilitator's LiteSVM-backed signer (sign as fee payer, simulate, send, confirm) */
  facilitatorSigner: {
    signTransaction(transaction: string, feePayer: string): Promise<string>;
    simulateTransaction(transaction: string): Promise<void>;
    sendTransaction(transaction: string): Promise<string>;
    confirmTransaction(signature: string): Promise<void>;
  };
  /** gives a wallet its starting test USDC if the emulator has not seen it before */
  welcome(owner: string): Promise<void>;
}

export async function createSolanaRail(_ctx: EmulatorContext, options: { importer?: () => Promise<unknown> } = {}): Promise<SolanaRail> {
  const ledger = await createSolanaLedger(options);
  const [kit, token, { x402Facilitator }, { ExactSvmScheme }] = await railImport(() =>
    Promise.all([
      import("@solana/kit"),
      import("@solana-program/token"),
      import("@x402/core/facilitator"),
      import("@x402/svm/exact/facilitator"),
    ]),
  );
  const { mint } = ledger;
  const feePayer = await kit.generateKeyPairSigner();
  const treasury = (await kit.generateKeyPairSigner()).address;
  ledger.setLamports(feePayer.address, FEE_PAYER_LAMPORTS);
  await ledger.ensureTokenAccount(treasury, 0n);
  const b64enc = kit.getBase64Encoder();
  const txDecoder = kit.getTransactionDecoder();
  const messageDecoder = kit.getCompiledTransactionMessageDecoder();
  const decode = (base64: string) => txDecoder.decode(b64enc.encode(base64));
  type Tx = ReturnType<typeof decode>;

  /** The TransferChecked a transaction carries (the facilitator has checked the layout before it asks). */
  function transferOf(tx: Tx) {
    const message = kit.decompileTransactionMessage(messageDecoder.decode(tx.messageBytes));
    const ix = message.instructions.find((i) => i.programAddress === token.TOKEN_PROGRAM_ADDRESS && i.data?.[0] === TRANSFER_CHECKED);
    if (!ix?.data || !ix.accounts || ix.accounts.length < 4) throw new Error("no TransferChecked instruction");
    const view = new DataView(ix.data.buffer, ix.data.byteOffset, ix.data.byteLength);
    return {
      source: ix.accounts[0]!.address as string,
      authority: ix.accounts[3]!.address as string,
      amount: view.getBigUint64(1, true),
    };
  }

  const welcomed = new Set<string>();
  async function welcome(owner: string) {
    if (welcomed.has(owner)) return;
    welcomed.add(owner);
    await ledger.ensureTokenAccount(owner);
  }
  /** First sight of a payer: its own associated token account gets its starting test USDC. */
  async function welcomePayer(tx: Tx) {
    let t: ReturnType<typeof transferOf>;
    try {
      t = transferOf(tx);
    } catch {
      return; // the SVM will refuse whatever this is
    }
    if ((await ledger.tokenAccountOf(t.authority)) === t.source) await welcome(t.authority);
  }
  const coSigned = async (tx: Tx) =>
    kit.partiallySignTransaction([feePayer.keyPair], tx as Parameters<typeof kit.partiallySignTransaction>[1]);

  const facilitatorSigner = {
    getAddresses: () => [feePayer.address],
    async signTransaction(transaction: string, payer: string) {
      if (payer !== feePayer.address) throw new Error("unknown fee payer");
      return kit.getBase64EncodedWireTransaction(await coSigned(decode(transaction)));
    },
    async simulateTransaction(transaction: string) {
      const tx = decode(transaction);
      await welcomePayer(tx);
      // co-signed for the simulation only, so LiteSVM checks every signature (the client's too)
      const full = await coSigned(tx);
      const r = ledger.svm.simulateTransaction(full as unknown as Parameters<typeof ledger.svm.simulateTransaction>[0]);
      if ("err" in r && typeof r.err === "function") {
        const logs = r.meta().logs();
        throw new Error(`simulation failed: ${r.toString().slice(0, 300)}${logs.length ? ` | ${logs.slice(-3).join(" | ")}` : ""}`);
      }
    },
    async sendTransaction(transaction: string) {
      return ledger.sendTransaction(decode(transaction));
    },
    async confirmTransaction(signature: string) {
      // LiteSVM executes synchronously: a sent transaction is final or was refused on send
      if (!ledger.svm.getTransaction(signature as Parameters<typeof ledger.svm.getTransaction>[0]))
        throw new Error("transaction not found");
    },
  };
  const facilitator = new x402Facilitator().register(
    SOLANA_MAINNET,
    new ExactSvmScheme(facilitatorSigner as unknown as ConstructorParameters<typeof ExactSvmScheme>[0]),
  );

  const rpcRoute = async (req: EmulatorRequest): Promise<EmulatorResponse> => {
    const parsed = parseBody(req.body);
    return { status: 200, body: parsed.ok ? await ledger.rpc(parsed.body) : PARSE_ERROR };
  };
  const faucetRoute = async (req: EmulatorRequest): Promise<EmulatorResponse> => {
    const parsed = parseBody(req.body);
    const b = (parsed.ok ? parsed.body : undefined) as { owner?: unknown; amountAtomic?: unknown } | undefined;
    let owner: string;
    try {
      owner = kit.address(String(b?.owner ?? ""));
    } catch {
      return { status: 400, body: { error: "owner must be a base58 Solana address" } };
    }
    const amount = b?.amountAtomic;
    if (amount !== undefined && !(typeof amount === "string" && /^[0-9]{1,20}$/.test(amount))) {
      return { status: 400, body: { error: "amountAtomic must be a decimal string" } };
    }
    welcomed.add(owner);
    const account = amount === undefined ? await ledger.ensureTokenAccount(owner) : await ledger.mintTo(owner, BigInt(amount));
    return { status: 200, body: { owner, tokenAccount: account, mint, amount: (ledger.tokenBalance(account) ?? 0n).toString() } };
  };
  const routes: Route[] = [
    { method: "POST", pattern: "/x402/solana/rpc", auth: "public", handler: (req) => rpcRoute(req) },
    { method: "POST", pattern: "/x402/solana/faucet", auth: "public", handler: (req) => faucetRoute(req) },
  ];

  type Payload = Parameters<typeof facilitator.settle>[0];
  type Requirements = Parameters<typeof facilitator.settle>[1];
  return {
    network: SOLANA_MAINNET,
    mint,
    payTo: treasury,
    feePayer: feePayer.address,
    ledger,
    routes,
    facilitatorSigner,
    welcome,
    requirement(amountAtomic: bigint) {
      return {
        scheme: "exact",
        network: SOLANA_MAINNET,
        amount: amountAtomic.toString(),
        asset: mint,
        payTo: treasury,
        maxTimeoutSeconds: 300,
        extra: { feePayer: feePayer.address },
      };
    },
    amountOf(payload, accepted) {
      const tx = (payload.payload as { transaction?: unknown } | undefined)?.transaction;
      if (typeof tx !== "string") return undefined;
      try {
        return transferOf(decode(tx)).amount;
      } catch {
        const a = accepted?.amount;
        return typeof a === "string" && /^[0-9]{1,40}$/.test(a) ? BigInt(a) : undefined;
      }
    },
    async settle(payload, requirement) {
      const r = await facilitator.settle(payload as unknown as Payload, requirement as unknown as Requirements);
      return { success: r.success, transaction: r.transaction, payer: r.payer, errorReason: r.errorReason };
    },
    async balanceOf(owner: string) {
      return ledger.tokenBalance(await ledger.tokenAccountOf(owner)) ?? 0n;
    },
  };
}
