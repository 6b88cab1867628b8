/**
 * Solidity sources for the local chain, compiled at runtime with the `solc` npm package (no downloaded binaries,
 * no checked-in bytecode to drift from the source). Target `paris`: ganache 7.9 stops at Shanghai and has no PUSH0
 * in some paths, so paris is the safe EVM version.
 */

/**
 * A minimal EIP-3009 token shaped like USDC v2: ERC-20 + transferWithAuthorization / receiveWithAuthorization /
 * cancelAuthorization, EIP-712 domain (name, version, chainId, verifyingContract). Written by hand because the real
 * FiatToken is a large proxy system; this keeps only what x402 settlement and the RPC tools read.
 *
 * No constructor and no immutables: the local chain installs the runtime code at the real USDC address
 * (`evm_setAccountCode`) and then calls `initialize` once, so nothing may be baked in at deploy time. Like
 * FiatToken v2.2, the EIP-712 domain separator is computed from `block.chainid` and `address(this)` on each use,
 * and `transferWithAuthorization` checks its signature as v2.2's SignatureChecker does: recovered with ECDSA when
 * `from` has no code (each overload exactly as before), asked through ERC-1271 `isValidSignature` when `from` is a
 * contract (a smart account). Both overloads do, as in v2.2: the x402 facilitator sends any 65-byte signature, a
 * smart account's too, through the (v, r, s) one, and longer ones through the bytes one.
 */
export const USDC_SOURCE = String.raw`// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract TestUSDC {
    string public name;
    string public version;
    string public constant symbol = "USDC";
    uint8 public constant decimals = 6;
    uint256 public totalSupply;
    address public owner;

    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    mapping(address => mapping(bytes32 => bool)) private _authorizationStates;

    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH =
        keccak256("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)");
    bytes32 public constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH =
        keccak256("ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)");
    bytes32 public constant CANCEL_AUTHORIZATION_TYPEHASH =
        keccak256("CancelAuthorization(address authorizer,bytes32 nonce)");

    // secp256k1n / 2: signatures with a higher s are malleable copies (EIP-2)
    // IERC1271.isValidSignature.selector, also its answer for a valid signature
    bytes4 private constant ERC1271_MAGIC_VALUE = 0x1626ba7e;
    uint256 private constant HALF_N = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
    event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce);

    /// Called once, right after the code is installed (the state a constructor would have written).
    function initialize(string calldata name_, string calldata version_, address owner_, address[] calldata holders, uint256 amountEach) external {
        require(owner == address(0), "TestUSDC: already initialized");
        require(owner_ != address(0), "TestUSDC: owner is the zero address");
        name = name_;
        version = version_;
        owner = owner_;
        for (uint256 i = 0; i < holders.length; i++) {
            _mint(holders[i], amountEach);
        }
    }

    /// For the address the token lives at and the chain it runs on, whatever address it was compiled or deployed for.
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(
            keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"),
            keccak256(bytes(name)),
            keccak256(bytes(version)),
            block.chainid,
            address(this)
        ));
    }

    function mint(address to, uint256 value) external {
        require(msg.sender == owner, "TestUSDC: caller is not the owner");
        _mint(to, value);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _transfer(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= value, "ERC20: transfer amount exceeds allowance");
        if (allowed != type(uint256).max) {
            allowance[from][msg.sender] = allowed - value;
        }
        _transfer(from, to, value);
        return true;
    }

    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _authorizationStates[authorizer][nonce];
    }

    function transferWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce,
        uint8 v, bytes32 r, bytes32 s
    ) external {
        bytes32 structHash = _authorizedTransferHash(from, to, value, validAfter, validBefore, nonce);
        if (from.code.length == 0) require(_recover(structHash, v, r, s) == from, "FiatTokenV2: invalid signature");
        // v2.2 packs (r, s, v) for a contract: the reference facilitator sends any 65-byte signature this way
        else _requireValidErc1271(from, structHash, abi.encodePacked(r, s, v));
        _markAuthorizationAsUsed(from, nonce);
        _transfer(from, to, value);
    }

    /// USDC v2.2 overload taking the signature as bytes: 65 packed bytes from an address without code (x402 sends
    /// this form for non-split signatures), whatever its ERC-1271 isValidSignature accepts from a contract.
    function transferWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce,
        bytes memory signature
    ) external {
        bytes32 structHash = _authorizedTransferHash(from, to, value, validAfter, validBefore, nonce);
        if (from.code.length == 0) {
            (uint8 v, bytes32 r, bytes32 s) = _split(signature);
            require(_recover(structHash, v, r, s) == from, "FiatTokenV2: invalid signature");
        } else {
            _requireValidErc1271(from, structHash, signature);
        }
        _markAuthorizationAsUsed(from, nonce);
        _transfer(from, to, value);
    }

    function _authorizedTransferHash(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce
    ) private view returns (bytes32) {
        _requireValidAuthorization(from, nonce, validAfter, validBefore);
        return keccak256(abi.encode(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce));
    }

    function receiveWithAuthorization(
        address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce,
        uint8 v, bytes32 r, bytes32 s
    ) external {
        require(to == msg.sender, "FiatTokenV2: caller must be the payee");
        _requireValidAuthorization(from, nonce, validAfter, validBefore);
        bytes32 structHash = keccak256(abi.encode(RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce));
        require(_recover(structHash, v, r, s) == from, "FiatTokenV2: invalid signature");
        _markAuthorizationAsUsed(from, nonce);
        _transfer(from, to, value);
    }

    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external {
        require(!_authorizationStates[authorizer][nonce], "FiatTokenV2: authorization is used or canceled");
        bytes32 structHash = keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce));
        require(_recover(structHash, v, r, s) == authorizer, "FiatTokenV2: invalid signature");
        _authorizationStates[authorizer][nonce] = true;
        emit AuthorizationCanceled(authorizer, nonce);
    }

    function _requireValidAuthorization(address authorizer, bytes32 nonce, uint256 validAfter, uint256 validBefore) private view {
        require(block.timestamp > validAfter, "FiatTokenV2: authorization is not yet valid");
        require(block.timestamp < validBefore, "FiatTokenV2: authorization is expired");
        require(!_authorizationStates[authorizer][nonce], "FiatTokenV2: authorization is used or canceled");
    }

    /// v2.2's SignatureChecker for a contract signer (OpenZeppelin's isValidERC1271SignatureNow): the magic value back.
    function _requireValidErc1271(address signer, bytes32 structHash, bytes memory signature) private view {
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
        (bool ok, bytes memory result) = signer.staticcall(abi.encodeWithSelector(ERC1271_MAGIC_VALUE, digest, signature));
        require(ok && result.length >= 32 && abi.decode(result, (bytes32)) == bytes32(ERC1271_MAGIC_VALUE), "FiatTokenV2: invalid signature");
    }

    function _markAuthorizationAsUsed(address authorizer, bytes32 nonce) private {
        _authorizationStates[authorizer][nonce] = true;
        emit AuthorizationUsed(authorizer, nonce);
    }

    function _recover(bytes32 structHash, uint8 v, bytes32 r, bytes32 s) private view returns (address) {
        require(uint256(s) <= HALF_N, "ECRecover: invalid signature 's' value");
        require(v == 27 || v == 28, "ECRecover: invalid signature 'v' value");
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
        address signer = ecrecover(digest, v, r, s);
        require(signer != address(0), "ECRecover: invalid signature");
        return signer;
    }

    function _split(bytes memory signature) private pure returns (uint8 v, bytes32 r, bytes32 s) {
        require(signature.length == 65, "ECRecover: invalid signature length");
        assembly {
            r := mload(add(signature, 0x20))
            s := mload(add(signature, 0x40))
            v := byte(0, mload(add(signature, 0x60)))
        }
        if (v < 27) v += 27;
    }

    function _transfer(address from, address to, uint256 value) private {
        require(to != address(0), "ERC20: transfer to the zero address");
        require(balanceOf[from] >= value, "ERC20: transfer amount exceeds balance");
        unchecked { balanceOf[from] -= value; }
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }

    function _mint(address to, uint256 value) private {
        totalSupply += value;
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }
}
`;

/**
 * Multicall3-compatible contract (same ABI as the canonical one at 0xcA11...CA11 for the functions viem and
 * ethers use). Compiled here because the official runtime bytecode is not shipped in any installed package.
 */
// biome-ignore lint/complexity/noUselessStringRaw: Solidity pasted as written; raw keeps any backslash it gains
export const MULTICALL3_SOURCE = String.raw`// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract Multicall3 {
    struct Call { address target; bytes callData; }
    struct Call3 { address target; bool allowFailure; bytes callData; }
    struct Call3Value { address target; bool allowFailure; uint256 value; bytes callData; }
    struct Result { bool success; bytes returnData; }

    function aggregate(Call[] calldata calls) public payable returns (uint256 blockNumber, bytes[] memory returnData) {
        blockNumber = block.number;
        returnData = new bytes[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool success, bytes memory ret) = calls[i].target.call(calls[i].callData);
            require(success, "Multicall3: call failed");
            returnData[i] = ret;
        }
    }

    function tryAggregate(bool requireSuccess, Call[] calldata calls) public payable returns (Result[] memory returnData) {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool success, bytes memory ret) = calls[i].target.call(calls[i].callData);
            if (requireSuccess) require(success, "Multicall3: call failed");
            returnData[i] = Result(success, ret);
        }
    }

    function tryBlockAndAggregate(bool requireSuccess, Call[] calldata calls)
        public payable returns (uint256 blockNumber, bytes32 blockHash, Result[] memory returnData)
    {
        blockNumber = block.number;
        blockHash = blockhash(block.number);
        returnData = tryAggregate(requireSuccess, calls);
    }

    function aggregate3(Call3[] calldata calls) public payable returns (Result[] memory returnData) {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool success, bytes memory ret) = calls[i].target.call(calls[i].callData);
            require(calls[i].allowFailure || success, "Multicall3: call failed");
            returnData[i] = Result(success, ret);
        }
    }

    function aggregate3Value(Call3Value[] calldata calls) public payable returns (Result[] memory returnData) {
        uint256 valAccumulator;
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            valAccumulator += calls[i].value;
            (bool success, bytes memory ret) = calls[i].target.call{value: calls[i].value}(calls[i].callData);
            require(calls[i].allowFailure || success, "Multicall3: call failed");
            returnData[i] = Result(success, ret);
        }
        require(msg.value == valAccumulator, "Multicall3: value mismatch");
    }

    function getBlockNumber() public view returns (uint256) { return block.number; }
    function getBlockHash(uint256 blockNumber) public view returns (bytes32) { return blockhash(blockNumber); }
    function getCurrentBlockTimestamp() public view returns (uint256) { return block.timestamp; }
    function getCurrentBlockGasLimit() public view returns (uint256) { return block.gaslimit; }
    function getCurrentBlockCoinbase() public view returns (address) { return block.coinbase; }
    function getLastBlockHash() public view returns (bytes32) { return blockhash(block.number - 1); }
    function getEthBalance(address addr) public view returns (uint256) { return addr.balance; }
    function getBasefee() public view returns (uint256) { return block.basefee; }
    function getChainId() public view returns (uint256) { return block.chainid; }
}
`;
