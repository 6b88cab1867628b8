/**
 * langchain-service: the LangChain.js chat model and embeddings, the plain API client, wallet sign-in and
 * self-paying top-ups (x402), crypto JSON-RPC tools and web, image and speech tools, over one fetch stack.
 * The local service emulator is its own package: `langchain-service-emulator`.
 *
 * The public API is this list (test/package/exports.test.ts holds the runtime names): what is not named here
 * is internal and may change without notice.
 */

// the stack and the plain client
export { createServiceFetch, type FetchStackOptions } from "./stack.js";
// the state stacks share (guards, limiters, gates, clock, wallet states): one per process unless given
export { ServiceContext, createServiceContext, defaultServiceContext, type ServiceContextOptions } from "./http/context.js";
export { ServiceClient, type ServiceClientOptions, type RateLimits, type RateLimitLogEntry } from "./client.js";
export type { ServiceApi } from "./api/request.js";
export { parseServiceHeaders, retryAfterMs } from "./http/headers.js";
// the headers that carry a payment (the emulator accepts them on the top-up route only)
export { PAYMENT_HEADERS } from "./http/redirects.js";
// the brand's header names (the emulator answers with the same names the client reads)
export { brandNames, type BrandNames } from "./http/config.js";
export type { FetchLike } from "./http/types.js";
export type { ServiceResponseHeaders, RateLimitHeaders, X402PaymentRequired } from "./http/header-types.js";

// errors: one base class, a subclass per condition
export {
  ServiceError,
  ConfigurationError,
  ValidationError,
  UnsupportedCapabilityError,
  BadRequestError,
  AuthenticationError,
  ProOnlyModelError,
  PermissionDeniedError,
  NotFoundError,
  ModelNotFoundError,
  CharacterNotFoundError,
  InsufficientBalanceError,
  PaymentRequiredError,
  RateLimitError,
  AbuseBlockError,
  ServerError,
  GatewayTimeoutError,
  UnexpectedStatusError,
  NetworkError,
  TimeoutError,
  AbortError,
  StreamError,
  InBandStreamError,
  ResponseFormatError,
  ResponseTooLargeError,
  PayloadTooLargeError,
  RedirectError,
  UnsupportedNetworkError,
  PaymentPolicyError,
  BudgetExceededError,
  PaymentFailedError,
  StoreUnavailableError,
  ModelOverloadedError,
  ContentFilterError,
  ContentPolicyError,
  TopUpRejectedError,
  PaymentsUnavailableError,
  PaymentNotCurableError,
  type ServiceErrorInit,
} from "./http/errors.js";
export {
  ModelAccessDeniedError,
  ModelOfflineError,
  UnsupportedParameterError,
  ContentViolationError,
  type ModelAccessReason,
} from "./http/model-errors.js";

// the `/models` records and what they say of a model
export {
  modelPricing,
  type ModelPrice,
  type ModelPricing,
  type ServiceModel,
} from "./models/records.js";
export { modelFacts, type ModelFacts, type ModelDeprecation } from "./models/facts.js";

// the chat face (also `langchain-service/chat`)
export {
  ChatService,
  webSearchCitations,
  webSearchDocuments,
  costOf,
  responseHeadersOf,
  mapCitations,
  buildModelId,
  inBandErrorOf,
  MessageRefusedError,
  type ChatServiceInput,
  type ChatServiceCallOptions,
  type ServiceCost,
  type ServiceResponseFormat,
  type ServiceToolChoice,
  type ChatRequestFields,
  type ReasoningEffort,
  type ReasoningOptions,
  type PromptCacheRetention,
  type Verbosity,
  type ServiceModelProfile,
  type ServiceParameters,
  type ServiceParametersEcho,
  type WebSearchCitation,
  type WebSearchMode,
  type MapCitationsOptions,
  type MappedCitations,
  type CitationReference,
  type WithResponseMetadata,
  type InBandErrorFields,
} from "./chat/index.js";
// the search-documents call's wire id and name (the emulator writes what the client reads)
export { SEARCH_DOCUMENTS_CALL_ID, SEARCH_DOCUMENTS_CALL_NAME } from "./chat/search-documents.js";

// crypto RPC: calls, tools, library adapters
export {
  cryptoRpc,
  CryptoNetworksTool,
  CryptoRpcTool,
  NativeBalanceTool,
  Erc20BalanceTool,
  TransactionStatusTool,
  LatestBlockTool,
  ContractReadTool,
  CryptoRpcToolkit,
  ToolInputError,
  createEthersProvider,
  // the proxy's method rules and networks (one source for the client's checks and the emulator's)
  methodTier,
  unsupportedReason,
  needsNodeKeys,
  NODE_KEYS_REASON,
  describeNetwork,
  isFilterOrSubscription,
  type NetworkFamily,
  type CryptoRpcToolkitOptions,
  type CryptoToolOptions,
  type CryptoRpcOptions,
  type CryptoRpcBilling,
  type CryptoRpcSingleResult,
  type CryptoRpcBatchResult,
  type JsonRpcId,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type JsonRpcErrorObject,
  type NetworkInfo,
  type EthersProviderOptions,
} from "./crypto-rpc/index.js";

// embeddings
export { ServiceEmbeddings, type ServiceEmbeddingsInput, type EmbeddingsUsage, type EmbeddingsCost } from "./embeddings/index.js";

// agent tools and the operations under them
export {
  WebSearchTool,
  WebScrapeTool,
  ImageGenerationTool,
  TextToSpeechTool,
  TranscriptionTool,
  ImageEditTool,
  VideoGenerationTool,
  AudioGenerationTool,
  UnsafeUrlError,
  webSearch,
  webScrape,
  generateImage,
  simpleGenerateImage,
  createSpeech,
  listVoices,
  createClonedVoice,
  type WebSearchToolOptions,
  type WebScrapeToolOptions,
  type ImageGenerationToolOptions,
  type TextToSpeechToolOptions,
  type TranscriptionToolOptions,
  type ImageEditToolOptions,
  type VideoGenerationToolOptions,
  type AudioGenerationToolOptions,
  type ServiceToolConnection,
  type WebSearchParameters,
  type WebSearchProvider,
  type WebSearchResult,
  type WebScrapeResult,
  type GenerateImageParameters,
  type GenerateImageResult,
  type GeneratedImage,
  type SimpleGenerateImageParameters,
  type CreateSpeechParameters,
  type SpeechFormat,
  type SpeechResult,
} from "./tools/index.js";

// media: transcription, long-running jobs, image editing
export {
  QuoteRefusedError,
  CreditBelowQuoteError,
  JobFailedError,
  JobOutcomeUnknownError,
  JobCancelledError,
  runJob,
  transcribe,
  editImage,
  multiEditImage,
  upscaleImage,
  removeBackground,
  sniffAudio,
  // the service's accepted values (one source for the client's checks and the emulator's)
  AUDIO_MIME_TYPES,
  MAX_TRANSCRIPTION_BYTES,
  VIDEO_DURATIONS,
  VIDEO_ASPECT_RATIOS,
  IMAGE_EDIT_ASPECT_RATIOS,
  type AudioContainer,
  type JobKind,
  type JobRefund,
  type JobProgress,
  type JobResult,
  type RunJobOptions,
  type VideoJobParameters,
  type AudioJobParameters,
  type TranscribeOptions,
  type TranscriptionResult,
  type TimedWord,
  type TimedSegment,
  type TimedChar,
  type ImageInput,
  type EditedImage,
  type EditImageParameters,
  type MultiEditImageParameters,
  type UpscaleImageParameters,
  type RemoveBackgroundParameters,
  type MediaInput,
} from "./media/index.js";

// account areas (API keys only)
export {
  listCharacters,
  getCharacter,
  getUsage,
  modelOfSku,
  type Character,
  type ListCharactersOptions,
  type UsageCurrency,
  type UsageRange,
  type UsageEntry,
  type ModelUsage,
  type UsageReport,
} from "./account/index.js";

// wallets, sign-in and self-paying top-ups
export {
  createSiwxHeader,
  PaymentPolicy,
  USDC_BASE,
  USDC_SOLANA,
  SOLANA_MAINNET,
  BASE_MAINNET,
  BASE_CHAIN_ID,
  SIWX_HEADER,
  SIWX_LEGACY_HEADER,
  withX402,
  PaymentSpendHandler,
  topUp,
  getX402Transactions,
  type X402Wallet,
  type WalletKind,
  type SiwxOptions,
  type PaymentPolicyOptions,
  type PaymentDecision,
  type PaymentRequirement,
  type PolicyRule,
  type AllowedAsset,
  type PaymentApprovalRequest,
  type X402PaymentOptions,
  type TopUpResult,
  type PaymentSource,
  type X402Fetch,
  type X402Balance,
  type PaymentEvent,
  type PaymentEventType,
  type TopUpOptions,
  type TransactionsOptions,
  type X402Transaction,
  type X402Transactions,
} from "./x402/index.js";

// shared state (the Redis store is `langchain-service/redis`)
export { MemoryStore } from "./store/memory.js";
export type { PaymentStore, SpendScope, SpendCandidate, SpendRequest, SpendOutcome } from "./store/types.js";
export type { LimitStore } from "./http/shared-limits.js";

// spend governance
export {
  SpendBudget,
  SpendLog,
  type SpendBudgetOptions,
  type ChargeRecord,
  type PaymentRecord,
  type SpendRecord,
  type Reconciliation,
} from "./spend/index.js";

// the names the agent middleware (langchain-service/agents) writes: its event and its message marker
export { SPEND_WARNING_EVENT, SPEND_LIMIT_KEY } from "./agents/keys.js";
