/**
 * The Solana rail of the emulator. `@x402/svm`'s facilitator (`ExactSvmScheme`) verifies and settles for real:
 * it decodes the client's partially signed v0 transaction, checks its instruction layout, mint, payee token
 * account, amount and fee-payer safety, co-signs as fee payer and sends it. What it sends to is an in-memory SPL
 * ledger here, because `litesvm` (the in-process SVM the design names) is not installed on this machine and no
 * npm package runs a Solana validator: the ledger checks every signature with Ed25519, the blockhash, the
 * TransferChecked amount and mint, the source balance, and refuses a transaction seen before.
 *
 * The client's `ExactSvmScheme` needs an RPC for the mint and a blockhash: `POST /x402/solana/rpc` serves
 * `getAccountInfo` (the mint), `getLatestBlockhash`, `getTokenAccountBalance`, `getBalance`, `getSlot`.
 * Every token account starts with 1,000,000 test USDC, so any Solana wallet can pay.
 */
import { randomBytes, verify as nodeVerify } from "node:crypto";
import { ed25519PublicKeyObject, SOLANA_MAINNET } from "../../x402/wallets.js";
import { base58ToBytes } from "../../x402/encoding.js";
import type { EmulatorContext, EmulatorRequest, EmulatorResponse, Route } from "../types.js";
import type { Rail } from "./index.js";

const DECIMALS = 6;
const STARTING_ATOMIC = 1_000_000n * 10n ** BigInt(DECIMALS);
const TRANSFER_CHECKED = 12;

export interface SolanaRail extends Rail {
  mint: string;
  payTo: string;
  feePayer: string;
  /** token balance (atomic) of an owner's associated token account */
  balanceOf(owner: string): Promise<bigint>;
}

export async function createSolanaRail(_ctx: EmulatorContext): Promise<SolanaRail | undefined> {
  const [kit, token, { x402Facilitator }, { ExactSvmScheme }] = await Promise.all([
    import("@solana/kit"),
    // a dependency of @x402/svm: the SPL token program's encoders and ATA derivation
    import("@solana-program/token"),
    import("@x402/core/facilitator"),
    import("@x402/svm/exact/facilitator"),
  ]);
  const feePayer = await kit.generateKeyPairSigner();
  const mint = (await kit.generateKeyPairSigner()).address;
  const treasury = (await kit.generateKeyPairSigner()).address;
  const b58 = kit.getBase58Decoder();
  const b64enc = kit.getBase64Encoder();
  const b64dec = kit.getBase64Decoder();
  const txDecoder = kit.getTransactionDecoder();
  const messageDecoder = kit.getCompiledTransactionMessageDecoder();

  const balances = new Map<string, bigint>(); // token account -> atomic
  const blockhashes = new Map<string, number>(); // issued blockhash -> last valid height
  const seen = new Set<string>(); // settled transaction signatures
  let slot = 1_000;
  let supply = 0n;

  const ata = async (owner: string) =>
    (await token.findAssociatedTokenPda({ mint, owner: kit.address(owner), tokenProgram: token.TOKEN_PROGRAM_ADDRESS }))[0];
  const balanceOfAccount = (account: string) => {
    if (!balances.has(account)) {
      balances.set(account, STARTING_ATOMIC);
      supply += STARTING_ATOMIC;
    }
    return balances.get(account)!;
  };

  const decode = (base64: string) => txDecoder.decode(b64enc.encode(base64));

  /** The TransferChecked the transaction carries (the facilitator has already checked the layout). */
  function transferOf(base64: string) {
    const tx = decode(base64);
    const message = kit.decompileTransactionMessage(messageDecoder.decode(tx.messageBytes));
    const ix = message.instructions.find((i) => i.programAddress === token.TOKEN_PROGRAM_ADDRESS && i.data?.[0] === TRANSFER_CHECKED);
    if (!ix || !ix.data || !ix.accounts || ix.accounts.length < 4) throw new Error("no TransferChecked instruction");
    const view = new DataView(ix.data.buffer, ix.data.byteOffset, ix.data.byteLength);
    return {
      tx,
      blockhash: (message as { lifetimeConstraint?: { blockhash?: string } }).lifetimeConstraint?.blockhash,
      source: ix.accounts[0]!.address as string,
      mint: ix.accounts[1]!.address as string,
      destination: ix.accounts[2]!.address as string,
      amount: view.getBigUint64(1, true),
      decimals: ix.data[9],
    };
  }

  function check(base64: string, requireAllSignatures: boolean) {
    const t = transferOf(base64);
    if (t.mint !== mint) throw new Error("InvalidMint");
    if (t.decimals !== DECIMALS) throw new Error("MintDecimalsMismatch");
    if (!t.blockhash || !blockhashes.has(t.blockhash)) throw new Error("BlockhashNotFound");
    if (balanceOfAccount(t.source) < t.amount) throw new Error("InsufficientFunds");
    for (const [signer, signature] of Object.entries(t.tx.signatures)) {
      if (!signature) {
        if (requireAllSignatures) throw new Error(`missing signature of ${signer}`);
        continue;
      }
      const publicKey = base58ToBytes(signer, 32);
      if (!publicKey || !nodeVerify(null, Buffer.from(t.tx.messageBytes), ed25519PublicKeyObject(publicKey), Buffer.from(signature))) {
        throw new Error(`signature of ${signer} does not verify`);
      }
    }
    return t;
  }

  const signer = {
    getAddresses: () => [feePayer.address],
    async signTransaction(transaction: string, payer: string) {
      if (payer !== feePayer.address) throw new Error("unknown fee payer");
      const signed = await kit.partiallySignTransaction([feePayer.keyPair], decode(transaction) as Parameters<typeof kit.partiallySignTransaction>[1]);
      return kit.getBase64EncodedWireTransaction(signed);
    },
    async simulateTransaction(transaction: string) {
      check(transaction, false);
    },
    async sendTransaction(transaction: string) {
      const t = check(transaction, true);
      const feePayerSignature = t.tx.signatures[feePayer.address];
      if (!feePayerSignature) throw new Error("not signed by the fee payer");
      const id = b58.decode(feePayerSignature);
      if (seen.has(id)) throw new Error("AlreadyProcessed");
      seen.add(id);
      balances.set(t.source, balanceOfAccount(t.source) - t.amount);
      balances.set(t.destination, balanceOfAccount(t.destination) + t.amount);
      slot++;
      return id;
    },
    async confirmTransaction(signature: string) {
      if (!seen.has(signature)) throw new Error("transaction not found");
    },
  };
  const facilitator = new x402Facilitator().register(
    SOLANA_MAINNET,
    new ExactSvmScheme(signer as unknown as ConstructorParameters<typeof ExactSvmScheme>[0]),
  );

  // what the client's RPC needs
  const mintData = b64dec.decode(
    token.getMintEncoder().encode({ mintAuthority: null, supply: 0n, decimals: DECIMALS, isInitialized: true, freezeAuthority: null }) as Uint8Array,
  );
  async function rpc(req: EmulatorRequest): Promise<EmulatorResponse> {
    let call: { id?: unknown; method?: string; params?: unknown[] };
    try {
      call = JSON.parse(req.body.toString("utf8")) as typeof call;
    } catch {
      return { status: 200, body: { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } } };
    }
    const ok = (result: unknown) => ({ status: 200, body: { jsonrpc: "2.0", id: call.id ?? null, result } });
    const context = { slot, apiVersion: "2.0.0" };
    const param0 = String(call.params?.[0] ?? "");
    switch (call.method) {
      case "getAccountInfo":
        if (param0 === mint) {
          return ok({
            context,
            value: { data: [mintData, "base64"], executable: false, lamports: 1_461_600, owner: token.TOKEN_PROGRAM_ADDRESS, rentEpoch: 0, space: 82 },
          });
        }
        return ok({ context, value: null });
      case "getLatestBlockhash": {
        const blockhash = b58.decode(randomBytes(32));
        blockhashes.set(blockhash, slot + 150);
        return ok({ context, value: { blockhash, lastValidBlockHeight: slot + 150 } });
      }
      case "getTokenAccountBalance": {
        const amount = balanceOfAccount(param0).toString();
        return ok({ context, value: { amount, decimals: DECIMALS, uiAmount: Number(amount) / 10 ** DECIMALS, uiAmountString: String(Number(amount) / 10 ** DECIMALS) } });
      }
      case "getBalance":
        return ok({ context, value: 1_000_000_000 });
      case "getSlot":
      case "getBlockHeight":
        return ok(slot);
      default:
        return { status: 200, body: { jsonrpc: "2.0", id: call.id ?? null, error: { code: -32601, message: `Method not found: ${String(call.method)}` } } };
    }
  }
  const routes: Route[] = [{ method: "POST", pattern: "/x402/solana/rpc", auth: "public", handler: (req) => rpc(req) }];

  type Payload = Parameters<typeof facilitator.settle>[0];
  type Requirements = Parameters<typeof facilitator.settle>[1];
  return {
    network: SOLANA_MAINNET,
    mint,
    payTo: treasury,
    feePayer: feePayer.address,
    routes,
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
        return transferOf(tx).amount;
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
      return balanceOfAccount(await ata(owner));
    },
  };
}
