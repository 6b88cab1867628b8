/**
 * The `/embeddings` wire: batching within the service's limits, and reading a response (published shape
 * `{object: "list", data: [{object: "embedding", index, embedding}], model, usage: {prompt_tokens, total_tokens}}`)
 * into vectors in input order, decoding `encoding_format: "base64"` (little-endian float32).
 *
 * Checked by hand rather than with zod: a response of 2,048 vectors of 1,024 floats is two million numbers, and a
 * schema walk over them would cost more than the request.
 */
import { ResponseFormatError } from "../http/errors.js";
import type { ServiceResponseHeaders } from "../http/headers.js";
import { base64ToBytes, utf8Length } from "../runtime/bytes.js";

/** published: "any array must contain 2048 items or less" */
export const MAX_BATCH_SIZE = 2048;
/**
 * UTF-8 bytes of input per request. The service states no maximum request size; this keeps a batch of 2,048
 * long documents well below the 10 MiB that proxies (and the emulator) commonly refuse with 413.
 */
export const MAX_BATCH_BYTES = 4 * 1024 * 1024;

export type EncodingFormat = "float" | "base64";

/**
 * Splits `texts` into consecutive batches of at most `size` texts and `maxBytes` UTF-8 bytes (a single text
 * larger than `maxBytes` travels alone). Returns the start index of each batch and its texts.
 */
export function batches(texts: readonly string[], size: number, maxBytes = MAX_BATCH_BYTES): { start: number; texts: string[] }[] {
  const out: { start: number; texts: string[] }[] = [];
  let start = 0;
  let current: string[] = [];
  let bytes = 0;
  for (let i = 0; i < texts.length; i++) {
    const text = texts[i]!;
    const b = utf8Length(text);
    if (current.length > 0 && (current.length >= size || bytes + b > maxBytes)) {
      out.push({ start, texts: current });
      start = i;
      current = [];
      bytes = 0;
    }
    current.push(text);
    bytes += b;
  }
  if (current.length) out.push({ start, texts: current });
  return out;
}

/** little-endian float32 from base64, as plain numbers */
export function decodeBase64Float32(value: string): number[] {
  const buf = base64ToBytes(value);
  if (!buf) throw new Error("a base64 embedding is not base64");
  if (buf.length % 4 !== 0) throw new Error(`base64 embedding of ${buf.length} bytes is not a whole number of float32 values`);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
  const out = new Array<number>(buf.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

export interface EmbeddingsResponse {
  vectors: number[][];
  model?: string;
  promptTokens: number;
  totalTokens: number;
  /** `cost` when the deployment reports one (the published embeddings response has none) */
  cost?: { usd: number; diem: number };
}

function isFiniteNumber(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v);
}

/** The vectors of one response, in input order, checked against the batch it answers. */
export function readEmbeddingsResponse(body: unknown, count: number, headers: ServiceResponseHeaders): EmbeddingsResponse {
  const fail = (why: string): never => {
    // the body (megabytes of floats) is not kept on the error
    throw new ResponseFormatError(`unexpected /embeddings response: ${why}`, { headers });
  };
  if (!body || typeof body !== "object" || Array.isArray(body)) fail("not a JSON object");
  const { data, model, usage, cost } = body as { data?: unknown; model?: unknown; usage?: unknown; cost?: unknown };
  if (!Array.isArray(data)) fail("`data` is not an array");
  const list = data as unknown[];
  if (list.length !== count) fail(`${list.length} embeddings for ${count} inputs`);
  const vectors = new Array<number[]>(count);
  let width = -1;
  for (let i = 0; i < list.length; i++) {
    const item = list[i] as { index?: unknown; embedding?: unknown } | null;
    if (!item || typeof item !== "object") fail(`data[${i}] is not an object`);
    // `index` places the vector: the service may answer out of order
    const index = item!.index ?? i;
    if (typeof index !== "number" || !Number.isInteger(index) || index < 0 || index >= count)
      fail(`data[${i}].index is not an input index`);
    if (vectors[index as number]) fail(`two embeddings for input ${String(index)}`);
    let vector: number[] | undefined;
    const raw = item!.embedding;
    if (typeof raw === "string") {
      try {
        vector = decodeBase64Float32(raw);
      } catch (err) {
        fail(`data[${i}].embedding: ${(err as Error).message}`);
      }
    } else if (Array.isArray(raw)) {
      for (let j = 0; j < raw.length; j++) if (!isFiniteNumber(raw[j])) fail(`data[${i}].embedding[${j}] is not a number`);
      vector = raw as number[];
    } else fail(`data[${i}].embedding is neither an array of numbers nor a base64 string`);
    if (vector!.length === 0) fail(`data[${i}].embedding is empty`);
    if (width === -1) width = vector!.length;
    else if (vector!.length !== width) fail(`embeddings of different lengths (${width} and ${vector!.length})`);
    vectors[index as number] = vector!;
  }
  const u = (usage ?? {}) as { prompt_tokens?: unknown; total_tokens?: unknown };
  const promptTokens = isFiniteNumber(u.prompt_tokens) ? u.prompt_tokens : 0;
  const totalTokens = isFiniteNumber(u.total_tokens) ? u.total_tokens : promptTokens;
  const c = cost as { usd?: unknown; diem?: unknown } | undefined;
  return {
    vectors,
    model: typeof model === "string" ? model : undefined,
    promptTokens,
    totalTokens,
    cost: c && isFiniteNumber(c.usd) ? { usd: c.usd, diem: isFiniteNumber(c.diem) ? c.diem : 0 } : undefined,
  };
}
