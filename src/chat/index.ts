/**
 * The chat face (`langchain-service/chat`): `ChatService`, its option types, request fields, profile and the
 * accessors of its results. The public API is this list (test/package/exports.test.ts holds the runtime names);
 * the other modules of this folder are internal.
 */
export { ChatService } from "./chat-model.js";
export type { ChatServiceBinding } from "./binding.js";
export type { ChatServiceInput, ChatServiceCallOptions, ServiceCost, ServiceResponseFormat, ServiceToolChoice } from "./types.js";
export type { ChatRequestFields, ReasoningEffort, ReasoningOptions, PromptCacheRetention, Verbosity } from "./request-fields.js";
export type { ServiceModelProfile } from "./profile.js";
export type { ServiceParameters, ServiceParametersEcho, WebSearchCitation, WebSearchMode } from "./service-parameters.js";
export { buildModelId } from "./model-id.js";
export { mapCitations, type MapCitationsOptions, type MappedCitations, type CitationReference } from "./citations.js";
export { webSearchCitations, webSearchDocuments, costOf, responseHeadersOf, type WithResponseMetadata } from "./accessors.js";
export { inBandErrorOf, type InBandErrorFields } from "./stream-errors.js";
export { MessageRefusedError } from "./message-rules.js";
