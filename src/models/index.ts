/** The service's `/models` records, shared by every face of a context (./records.ts), and what they say of a model (./facts.ts). */
export {
  ModelRecords,
  ModelRecordSchema,
  ModelListSchema,
  ModelAliasListSchema,
  MODEL_RECORDS_TTL_MS,
  MODEL_RECORDS_RETRY_MS,
  modelRecordsFor,
  modelPricing,
  type ModelPrice,
  type ModelPricing,
  type ModelAliasList,
  type ServiceModel,
} from "./records.js";
export { modelFacts, REASONING_EFFORTS, type ModelFacts, type ModelDeprecation, type ReasoningEffortOption } from "./facts.js";
