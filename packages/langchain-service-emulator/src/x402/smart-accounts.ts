/**
 * Sign-ins from smart accounts, checked on the emulator's local chain as the live service checks them: EIP-1271
 * `isValidSignature` when the account is deployed, and an ERC-6492 signature (the factory call wrapped around the
 * owner's signature) before it is. viem's `verifyMessage` on a public client does both through its universal
 * validator (a deployless `eth_call` that deploys the account in the call when it has no code yet), so nothing
 * here unwraps or simulates by hand.
 */
import type { LocalChain } from "../types.js";

/** true when `signature` is the smart account's (deployed or counterfactual) EIP-191 signature of `message` */
export type ContractSignatureCheck = (address: string, message: string, signature: string) => Promise<boolean>;

export async function createContractSignatureCheck(chain: LocalChain): Promise<ContractSignatureCheck> {
  const viem = await import("viem");
  const client = viem.createPublicClient({ transport: viem.http(chain.rpcUrl) });
  return async (address, message, signature) => {
    if (!viem.isAddress(address, { strict: false }) || !viem.isHex(signature)) return false;
    try {
      return await client.verifyMessage({ address, message, signature });
    } catch {
      // a node that cannot run the validator, a malformed wrapper: not a valid signature
      return false;
    }
  };
}
