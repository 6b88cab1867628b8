/** The chat face (`langchain-service/chat`): `ChatService`, its option types, request fields, profile, content blocks and helpers. */
export { ChatService, ChatServiceBinding, resetDeprecationWarnings } from "./chat-model.js";
export type { ChatServiceInput, ChatServiceCallOptions, ServiceCost, ServiceResponseFormat, ServiceToolChoice } from "./types.js";
export {
  ReasoningEffortSchema,
  ReasoningOptionsSchema,
  PromptCacheRetentionSchema,
  VerbositySchema,
  AnonUserIdSchema,
  RequestFieldsSchema,
  REQUEST_FIELD_NAMES,
  REQUEST_FIELD_WIRE_NAMES,
  validateRequestFields,
  toWireRequestFields,
  type ChatRequestFields,
  type ReasoningEffort,
  type ReasoningOptions,
  type PromptCacheRetention,
  type Verbosity,
} from "./request-fields.js";
export { profileFromRecord, checkCapabilities, type ServiceModelProfile } from "./profile.js";
export {
  toStandardBlocks,
  citationAnnotations,
  registerContentBlockTranslator,
  SERVICE_BLOCK_TRANSLATOR,
  SEARCH_CALL_BLOCK_ID,
  type ContentBlockTranslator,
} from "./content-blocks.js";
export { structuredOutputMethodFor, schemaInstruction, type StructuredOutputMethod } from "./structured-output.js";
export {
  ServiceParametersSchema,
  WebSearchModeSchema,
  SERVICE_PARAMETER_KEYS,
  serviceParameterWireName,
  toWireServiceParameters,
  validateServiceParameters,
  type ServiceParameters,
  type ServiceParameterKey,
  type ServiceParametersEcho,
  type WebSearchCitation,
  type WebSearchMode,
} from "./service-parameters.js";
export { buildModelId, parseModelId, type ParsedModelId } from "./model-id.js";
export { mapCitations, type MapCitationsOptions, type MappedCitations, type CitationReference } from "./citations.js";
export { webSearchCitations, webSearchDocuments, costOf, responseHeadersOf, type WithResponseMetadata } from "./accessors.js";
export { splitThinkTags, ThinkTagSplitter, type ThinkSplit } from "./think-tags.js";
export { parseSseJson, type SseOptions } from "./sse.js";
export {
  toWireMessages,
  toUsageMetadata,
  mergeReasoningDetails,
  searchDocumentsFromArguments,
  type ReasoningDetail,
  type WireUsage,
} from "./convert.js";
export { inBandErrorOf, type InBandErrorFields } from "./stream-errors.js";
export { MessageRefusedError, MEDIA_PART_CAPS, MAX_VIDEO_PARTS_PER_REQUEST, type MessageRule } from "./message-rules.js";
