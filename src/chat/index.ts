export {
  ChatService,
  ReasoningEffortSchema,
  resetDeprecationWarnings,
  type ChatServiceInput,
  type ChatServiceCallOptions,
  type ServiceCost,
  type ServiceResponseFormat,
  type ServiceToolChoice,
  type ReasoningEffort,
} from "./chat-model.js";
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
