/**
 * A smart account as a signer: `smartAccountSigner({ address, owner, factory?, factoryData?, deployed? })` gives a
 * viem custom account (`toAccount`) whose address is the smart account's and whose signatures are its owner's, as
 * an ERC-1271 account checks them (`isValidSignature(hash, ownerSignature)`). Before the account is deployed, an
 * ERC-1271 check cannot run: the signature is wrapped in ERC-6492 (the factory call that deploys it, then the
 * owner's signature, then the magic suffix), which the service's sign-in and the x402 facilitator unwrap.
 *
 * Whether to wrap: `deployed: true` never, `false` always, a client (`{ getCode }`, e.g. viem's public client) asks
 * the chain before each signature until the account has code; without either, a factory means wrap (ERC-6492
 * verifiers accept a wrapped signature from a deployed account too: they check for code first).
 *
 * The owner signs the same digest the account is asked about, so this fits accounts that accept their owner's
 * plain signature (the emulator's, light single-owner accounts); accounts that sign a wrapped, account-bound hash
 * need their SDK's own signer. Part of `langchain-service/evm`, which imports viem statically.
 */
import { getAddress, serializeErc6492Signature, type Hex, type LocalAccount, type SignableMessage, type TypedDataDefinition } from "viem";
import { toAccount } from "viem/accounts";
import { ConfigurationError } from "../../http/errors.js";

/** What signs for the account: a viem `Account` (local, or custom from `toAccount`) or anything with these two. */
export interface SmartAccountOwner {
  signMessage(args: { message: SignableMessage }): Promise<Hex>;
  signTypedData(typedData: TypedDataDefinition): Promise<Hex>;
}

export interface SmartAccountSignerOptions {
  /** the smart account's address (counterfactual before deployment) */
  address: string;
  owner: SmartAccountOwner;
  /** the factory that deploys the account, and the call that does (`createAccount(...)`): for ERC-6492 */
  factory?: string;
  factoryData?: string;
  /** whether the account has code: a fixed answer, or a client asked before each signature until it has */
  deployed?: boolean | { getCode(args: { address: Hex }): Promise<Hex | undefined> };
}

/** a viem `LocalAccount` (source "custom"): `address`, `signMessage`, `signTypedData`; `signTransaction` refuses */
export type SmartAccountSigner = LocalAccount;

const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;

/** Checks everything before anything is signed; the owner is never printed. */
function checked(
  options: SmartAccountSignerOptions,
): Required<Pick<SmartAccountSignerOptions, "address" | "owner">> & SmartAccountSignerOptions {
  if (!options || typeof options !== "object")
    throw new ConfigurationError("smartAccountSigner: expected { address, owner, factory?, factoryData?, deployed? }");
  const { address, owner, factory, factoryData, deployed } = options;
  if (typeof address !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(address))
    throw new ConfigurationError("smartAccountSigner: address must be an EVM address (0x + 40 hex digits)");
  if (!owner || typeof owner.signMessage !== "function" || typeof owner.signTypedData !== "function") {
    throw new ConfigurationError("smartAccountSigner: owner must be a viem Account (or have signMessage and signTypedData)");
  }
  if ((factory === undefined) !== (factoryData === undefined))
    throw new ConfigurationError("smartAccountSigner: factory and factoryData go together (the ERC-6492 deployment call)");
  if (factory !== undefined && !/^0x[0-9a-fA-F]{40}$/.test(factory))
    throw new ConfigurationError("smartAccountSigner: factory must be an EVM address");
  if (factoryData !== undefined && !(HEX.test(factoryData) && factoryData.length > 2))
    throw new ConfigurationError("smartAccountSigner: factoryData must be non-empty 0x hex calldata");
  if (deployed === false && factory === undefined)
    throw new ConfigurationError(
      "smartAccountSigner: an account not deployed yet signs with ERC-6492, which needs factory and factoryData",
    );
  if (deployed !== undefined && typeof deployed !== "boolean" && typeof deployed?.getCode !== "function") {
    throw new ConfigurationError("smartAccountSigner: deployed must be a boolean or a client with getCode (a viem public client)");
  }
  return options as ReturnType<typeof checked>;
}

/** The smart account as a viem custom account, for `EvmWallet` and anything else that takes one. */
export function smartAccountSigner(options: SmartAccountSignerOptions): SmartAccountSigner {
  const { address, owner, factory, factoryData, deployed } = checked(options);
  const account = getAddress(address);
  let hasCode = deployed === true || factory === undefined;
  async function wrapped(signature: Hex): Promise<Hex> {
    if (!hasCode && typeof deployed === "object") {
      const code = await deployed.getCode({ address: account });
      // deployed once is deployed for good: stop asking
      if (code && code !== "0x") hasCode = true;
    }
    return hasCode ? signature : serializeErc6492Signature({ address: factory as Hex, data: factoryData as Hex, signature });
  }
  const custom = toAccount({
    address: account,
    signMessage: async ({ message }) => wrapped(await owner.signMessage({ message })),
    signTypedData: async (typedData) => wrapped(await owner.signTypedData(typedData as TypedDataDefinition)),
    signTransaction: async () => {
      throw new ConfigurationError(
        "smartAccountSigner: a smart account sends no raw transactions (its calls go through the account or a bundler)",
      );
    },
  });
  return custom;
}
