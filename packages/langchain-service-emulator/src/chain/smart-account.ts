/**
 * A minimal smart account for the local chain, and the CREATE2 factory that deploys it, so an agent's smart
 * account has its address before it exists (what ERC-6492 signatures are for) and an ERC-1271 `isValidSignature`
 * once it does. Compiled at runtime with solc like the token (contracts.ts); the factory's runtime code is
 * installed at a fixed address (`SMART_ACCOUNT_FACTORY_ADDRESS`), the accounts it makes are real CREATE2 deploys.
 *
 * The account accepts one kind of signature: its owner's 65-byte ECDSA signature of the hash it is asked about
 * (what `owner.signMessage` / `owner.signTypedData` return for the EIP-191 / EIP-712 digest). Production accounts
 * wrap the hash first (a replay-safe hash bound to the account) or encode an owner index; this one keeps only the
 * owner check, which is what the verifiers (viem's universal validator, the x402 facilitator, USDC) exercise.
 */
// biome-ignore lint/complexity/noUselessStringRaw: Solidity pasted as written; raw keeps any backslash it gains
export const SMART_ACCOUNT_SOURCE = String.raw`// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract SmartAccount {
    address public immutable owner;
    // secp256k1n / 2: signatures with a higher s are malleable copies (EIP-2)
    uint256 private constant HALF_N = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    constructor(address owner_) {
        require(owner_ != address(0), "SmartAccount: owner is the zero address");
        owner = owner_;
    }

    receive() external payable {}

    /// ERC-1271: 0x1626ba7e when the owner signed this hash, 0xffffffff otherwise (never a revert).
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        return _recover(hash, signature) == owner ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }

    /// The owner moves the account's assets (a token transfer, a call): what makes it a wallet.
    function execute(address target, uint256 value, bytes calldata data) external returns (bytes memory result) {
        require(msg.sender == owner, "SmartAccount: caller is not the owner");
        bool ok;
        (ok, result) = target.call{value: value}(data);
        if (!ok) {
            assembly { revert(add(result, 0x20), mload(result)) }
        }
    }

    function _recover(bytes32 hash, bytes calldata signature) private pure returns (address) {
        if (signature.length != 65) return address(0);
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (v < 27) v += 27;
        if (uint256(s) > HALF_N || (v != 27 && v != 28)) return address(0);
        return ecrecover(hash, v, r, s);
    }
}

contract SmartAccountFactory {
    event AccountCreated(address indexed account, address indexed owner, uint256 salt);

    /// Deploys the owner's account at its CREATE2 address (or returns it, already there).
    function createAccount(address owner, uint256 salt) external returns (address account) {
        account = getAddress(owner, salt);
        if (account.code.length > 0) return account;
        SmartAccount created = new SmartAccount{salt: bytes32(salt)}(owner);
        require(address(created) == account, "SmartAccountFactory: address mismatch");
        emit AccountCreated(account, owner, salt);
    }

    /// The counterfactual address: where createAccount(owner, salt) deploys, before it does.
    function getAddress(address owner, uint256 salt) public view returns (address) {
        bytes32 codeHash = keccak256(abi.encodePacked(type(SmartAccount).creationCode, abi.encode(owner)));
        return address(uint160(uint256(keccak256(abi.encodePacked(bytes1(0xff), address(this), bytes32(salt), codeHash)))));
    }
}
`;

/** Where the local chain installs the factory (no real chain has code here). */
export const SMART_ACCOUNT_FACTORY_ADDRESS = "0x0000000000000000000000000000000000006492";

/** ERC-1271's answer for a valid signature. */
export const ERC1271_MAGIC_VALUE = "0x1626ba7e";

export const SMART_ACCOUNT_FACTORY_ABI = [
  "function createAccount(address owner, uint256 salt) returns (address account)",
  "function getAddress(address owner, uint256 salt) view returns (address)",
  "event AccountCreated(address indexed account, address indexed owner, uint256 salt)",
] as const;

export const SMART_ACCOUNT_ABI = [
  "function owner() view returns (address)",
  "function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)",
  "function execute(address target, uint256 value, bytes data) returns (bytes result)",
] as const;
