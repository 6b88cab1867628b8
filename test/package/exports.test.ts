/**
 * The public API on purpose: each entry point exports an explicit list (no `export *`), and the runtime names
 * each one exports are written out here, sorted, so that a name cannot appear or vanish unnoticed. Adding a
 * public name means adding it here (and to the README where users read about it); a name only tests need is
 * imported by the tests from its source file, not from an entry.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const ENTRIES: Record<string, string[]> = {
  "src/index.ts": [
    "AbortError", "AbuseBlockError", "AudioGenerationTool", "AuthenticationError", "BadRequestError",
    "BudgetExceededError", "CharacterNotFoundError", "ChatService", "ConfigurationError", "ContentFilterError",
    "ContentPolicyError", "ContentViolationError", "ContractReadTool", "CreditBelowQuoteError", "CryptoNetworksTool",
    "CryptoRpcTool", "CryptoRpcToolkit", "Erc20BalanceTool", "GatewayTimeoutError", "ImageEditTool",
    "ImageGenerationTool", "InBandStreamError", "InsufficientBalanceError", "JobCancelledError", "JobFailedError",
    "JobOutcomeUnknownError", "LatestBlockTool", "MemoryStore", "MessageRefusedError", "ModelAccessDeniedError",
    "ModelNotFoundError", "ModelOfflineError", "ModelOverloadedError", "NativeBalanceTool", "NetworkError",
    "NotFoundError", "PayloadTooLargeError", "PaymentFailedError", "PaymentNotCurableError", "PaymentPolicy",
    "PaymentPolicyError", "PaymentRequiredError", "PaymentSpendHandler", "PaymentsUnavailableError",
    "PermissionDeniedError", "ProOnlyModelError", "QuoteRefusedError", "RateLimitError", "RedirectError",
    "ResponseFormatError", "ResponseTooLargeError", "SPEND_LIMIT_KEY", "SPEND_WARNING_EVENT", "ServerError",
    "ServiceClient", "ServiceContext", "ServiceEmbeddings", "ServiceError", "SpendBudget", "SpendLog",
    "StoreUnavailableError", "StreamError", "TextToSpeechTool", "TimeoutError", "ToolInputError",
    "TopUpRejectedError", "TransactionStatusTool", "TranscriptionTool", "USDC_BASE", "UnexpectedStatusError",
    // the proxy's method rules, networks, the brand's header names and the wallet constants the emulator package shares
    "NODE_KEYS_REASON", "SIWX_HEADER", "SIWX_LEGACY_HEADER", "SOLANA_MAINNET", "USDC_SOLANA", "brandNames", "defaultServiceContext", "describeNetwork",
    "isFilterOrSubscription", "methodTier", "needsNodeKeys", "sniffAudio", "unsupportedReason",
    // the wire tables the emulator package shares instead of copying them
    "AUDIO_MIME_TYPES", "BASE_CHAIN_ID", "BASE_MAINNET", "IMAGE_EDIT_ASPECT_RATIOS", "MAX_TRANSCRIPTION_BYTES",
    "PAYMENT_HEADERS", "SEARCH_DOCUMENTS_CALL_ID", "SEARCH_DOCUMENTS_CALL_NAME", "VIDEO_ASPECT_RATIOS", "VIDEO_DURATIONS",

    "UnsafeUrlError", "UnsupportedCapabilityError", "UnsupportedNetworkError", "UnsupportedParameterError",
    "ValidationError", "VideoGenerationTool", "WebScrapeTool", "WebSearchTool", "buildModelId", "costOf",
    "createClonedVoice", "createEthersProvider", "createServiceContext", "createServiceFetch", "createSiwxHeader",
    "createSpeech", "cryptoRpc", "editImage", "generateImage", "getCharacter", "getUsage", "getX402Transactions",
    "inBandErrorOf", "listCharacters", "listVoices", "mapCitations", "modelFacts", "modelOfSku", "modelPricing",
    "multiEditImage", "parseServiceHeaders", "removeBackground", "responseHeadersOf",
    "retryAfterMs", "runJob", "simpleGenerateImage", "topUp", "transcribe", "upscaleImage",
    "webScrape", "webSearch", "webSearchCitations", "webSearchDocuments", "withX402",
  ],
  "src/chat/index.ts": [
    "ChatService", "MessageRefusedError", "buildModelId", "costOf", "inBandErrorOf", "mapCitations",
    "responseHeadersOf", "webSearchCitations", "webSearchDocuments",
  ],
  "src/evm/index.ts": ["BASE_CHAIN_ID", "BASE_MAINNET", "EvmWallet", "smartAccountSigner"],
  "src/solana/index.ts": ["SOLANA_MAINNET", "SolanaWallet"],
  "src/agents/index.ts": ["SPEND_LIMIT_KEY", "SPEND_WARNING_EVENT", "paymentApprovalMiddleware", "spendLimitMiddleware"],
  "src/solana-connection/index.ts": ["createSolanaConnection"],
  "src/redis/index.ts": [
    "RedisStore", "StoreUnavailableError",
  ],
};

describe("entry points export explicit lists", () => {
  for (const [entry, expected] of Object.entries(ENTRIES)) {
    it(`${entry} exports exactly its listed runtime names`, async () => {
      const mod = (await import(`../../${entry}`)) as Record<string, unknown>;
      expect(Object.keys(mod).sort()).toEqual([...expected].sort());
    });

    it(`${entry} re-exports nothing wholesale (no export *)`, () => {
      const source = readFileSync(new URL(`../../${entry}`, import.meta.url), "utf8");
      expect(source.match(/^export \*.*$/gm) ?? []).toEqual([]);
    });
  }
});
