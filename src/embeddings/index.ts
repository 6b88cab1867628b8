/** `ServiceEmbeddings`: the LangChain embeddings over the one fetch stack. */
export {
  ServiceEmbeddings,
  DEFAULT_EMBEDDING_MODEL,
  type ServiceEmbeddingsInput,
  type EmbeddingsUsage,
  type EmbeddingsCost,
} from "./embeddings.js";
export { MAX_BATCH_SIZE as MAX_EMBEDDING_BATCH_SIZE, decodeBase64Float32, type EncodingFormat } from "./wire.js";
