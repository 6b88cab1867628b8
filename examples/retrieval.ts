/**
 * A retrieval chain over a few local documents: `ServiceEmbeddings` embeds them into an in-memory vector store,
 * the store's retriever picks the closest for a question, and `ChatService` answers from that context.
 *
 * The in-memory store is written here (`CosineStore`, ~30 lines, a LangChain `VectorStore`, so `asRetriever()`
 * and the rest of the VectorStore API come with it): `@langchain/core` ships only the abstract `VectorStore`, and
 * LangChain's `MemoryVectorStore` lives in another package (`@langchain/classic`) this one does not depend on.
 * Swap in any LangChain vector store: `ServiceEmbeddings` is a plain `Embeddings`.
 *
 *   npm run example:retrieval                      # against the embedded emulator
 *   SERVICE_BASE_URL=https://.../api/v1 SERVICE_API_KEY=... SERVICE_MODEL=... SERVICE_EMBEDDING_MODEL=... npm run example:retrieval
 */
import { pathToFileURL } from "node:url";
import { Document, type DocumentInterface } from "@langchain/core/documents";
import type { EmbeddingsInterface } from "@langchain/core/embeddings";
import { StringOutputParser } from "@langchain/core/output_parsers";
import { ChatPromptTemplate } from "@langchain/core/prompts";
import { RunnableLambda, RunnablePassthrough, RunnableSequence } from "@langchain/core/runnables";
import { VectorStore } from "@langchain/core/vectorstores";
import { ChatService } from "../src/index.js";
import { ServiceEmbeddings, type EmbeddingsUsage } from "../src/embeddings/index.js";
import { startEmulator } from "langchain-service-emulator";

/** A tiny in-memory VectorStore: cosine similarity over every stored vector (fine for a few thousand). */
export class CosineStore extends VectorStore {
  declare FilterType: (doc: DocumentInterface) => boolean;
  private readonly rows: { vector: number[]; norm: number; doc: DocumentInterface }[] = [];

  constructor(embeddings: EmbeddingsInterface) {
    super(embeddings, {});
  }

  _vectorstoreType(): string {
    return "cosine-memory";
  }

  async addDocuments(documents: DocumentInterface[]): Promise<void> {
    await this.addVectors(await this.embeddings.embedDocuments(documents.map((d) => d.pageContent)), documents);
  }

  async addVectors(vectors: number[][], documents: DocumentInterface[]): Promise<void> {
    vectors.forEach((vector, i) => {
      this.rows.push({ vector, norm: Math.hypot(...vector), doc: documents[i]! });
    });
  }

  async similaritySearchVectorWithScore(query: number[], k: number, filter?: this["FilterType"]): Promise<[DocumentInterface, number][]> {
    const qNorm = Math.hypot(...query) || 1;
    return this.rows
      .filter((row) => !filter || filter(row.doc))
      .map((row): [DocumentInterface, number] => {
        let dot = 0;
        for (let i = 0; i < query.length; i++) dot += query[i]! * row.vector[i]!;
        return [row.doc, dot / (qNorm * (row.norm || 1))];
      })
      .sort((a, b) => b[1] - a[1])
      .slice(0, k);
  }
}

export const DOCUMENTS = [
  new Document({
    pageContent:
      "Top-ups: a wallet adds credit with a USDC payment of at least $5 over x402; the client pays on a 402 by itself, within the owner's policy.",
    metadata: { source: "billing.md" },
  }),
  new Document({
    pageContent: "Rate limits: embedding models allow 500 requests per minute; image models 20; audio models 60.",
    metadata: { source: "limits.md" },
  }),
  new Document({
    pageContent: "Embeddings: send strings only, up to 2048 inputs per request; token arrays are refused with HTTP 400.",
    metadata: { source: "embeddings.md" },
  }),
  new Document({
    pageContent: "Reasoning models return reasoning details that must be sent back unchanged on tool-call turns.",
    metadata: { source: "reasoning.md" },
  }),
];

export interface Options {
  baseUrl?: string;
  apiKey?: string;
  question?: string;
  log?: (line: string) => void;
}

export interface Result {
  question: string;
  answer: string;
  /** the `source` of each retrieved document, best first */
  sources: string[];
  /** what embedding the question cost (tokens, requests); the documents' own usage is `indexUsage` */
  queryUsage?: EmbeddingsUsage;
  indexUsage?: EmbeddingsUsage;
  /** the embeddings' cost from the model's published price (indexing + question) */
  embeddingCostUsd?: number;
}

export async function main(options: Options = {}): Promise<Result> {
  const log = options.log ?? console.log;
  let baseUrl = options.baseUrl ?? process.env.SERVICE_BASE_URL;
  let apiKey = options.apiKey ?? process.env.SERVICE_API_KEY;
  // no deployment given: run against the local emulator (no network, no account)
  const emulator = baseUrl ? undefined : await startEmulator({ apiKeys: [{ key: "example-key", usd: 5 }] });
  if (emulator) [baseUrl, apiKey] = [emulator.url, "example-key"];
  try {
    const embeddings = new ServiceEmbeddings({ model: process.env.SERVICE_EMBEDDING_MODEL ?? "text-embedding-bge-m3", baseUrl, apiKey });
    // one stack for both: one pacing window, one abuse guard, one wallet when there is one
    const model = new ChatService({ model: process.env.SERVICE_MODEL ?? "emu-s", serviceFetch: embeddings.serviceFetch });

    const store = new CosineStore(embeddings);
    await store.addDocuments(DOCUMENTS);
    const indexUsage = embeddings.lastUsage;
    const retriever = store.asRetriever({ k: 1 });

    const prompt = ChatPromptTemplate.fromMessages([
      ["system", "Answer the question from the context only, in one sentence."],
      ["human", "Context:\n{context}\n\nQuestion: {question}"],
    ]);
    const retrieved: string[] = [];
    const formatDocs = RunnableLambda.from((docs: DocumentInterface[]) => {
      retrieved.push(...docs.map((d) => String(d.metadata.source)));
      return docs.map((d) => d.pageContent).join("\n");
    });
    const chain = RunnableSequence.from([
      { context: retriever.pipe(formatDocs), question: new RunnablePassthrough() },
      prompt,
      model,
      new StringOutputParser(),
    ]);

    const question = options.question ?? "How many inputs can one embeddings request carry, and are token arrays accepted?";
    const answer = await chain.invoke(question);
    const queryUsage = embeddings.lastUsage;
    const costs = await Promise.all([embeddings.estimateCost(indexUsage), embeddings.estimateCost(queryUsage)]);
    const embeddingCostUsd = costs.every((c) => c) ? costs.reduce((s, c) => s + c!.usd, 0) : undefined;

    log(`Q: ${question}`);
    log(`retrieved: ${retrieved.join(", ")}`);
    log(`A: ${answer}`);
    log(
      `(embeddings: ${(indexUsage?.promptTokens ?? 0) + (queryUsage?.promptTokens ?? 0)} tokens in ${(indexUsage?.requests ?? 0) + (queryUsage?.requests ?? 0)} requests` +
        (embeddingCostUsd !== undefined ? `, about $${embeddingCostUsd.toFixed(8)}` : "") +
        ")",
    );
    return { question, answer, sources: retrieved, queryUsage, indexUsage, embeddingCostUsd };
  } finally {
    await emulator?.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
