/**
 * Media a caller hands to a client method (a file path, bytes, a Blob, a web or Node stream), read into memory
 * with a size cap before anything is sent: an upload over the service's limit is a ValidationError here, not a
 * 413 after the bytes went out. (Multipart bodies are FormData + Blob, which need the bytes in hand.)
 */
import { ValidationError } from "../http/errors.js";
import { concatBytes, utf8Bytes } from "../runtime/bytes.js";
import { nodeFiles } from "../runtime/node.js";

/** A file path, bytes, a Blob, or a stream of bytes (web `ReadableStream` or a Node readable). */
export type MediaInput = string | Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

export interface ReadMedia {
  bytes: Uint8Array;
  /** the file's own name, when the input was a path (or a File) */
  filename?: string;
}

function tooLarge(what: string, maxBytes: number): ValidationError {
  return new ValidationError(`${what} is larger than ${Math.round(maxBytes / (1024 * 1024))} MB (the service's limit)`);
}

async function collect(chunks: AsyncIterable<Uint8Array>, what: string, maxBytes: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    const part = typeof chunk === "string" ? utf8Bytes(chunk) : chunk;
    size += part.byteLength;
    if (size > maxBytes) throw tooLarge(what, maxBytes);
    parts.push(part);
  }
  return concatBytes(parts);
}

/** Reads `input` whole, refusing more than `maxBytes` and an empty input (ValidationError, nothing sent). */
export async function readMediaInput(input: MediaInput, what: string, maxBytes: number): Promise<ReadMedia> {
  let out: ReadMedia;
  if (typeof input === "string") {
    if (input === "" || input.includes("\0")) throw new ValidationError(`${what}: not a file path`);
    const {
      fs: { open },
      path: { basename },
    } = nodeFiles(`${what} given as a file path`);
    let file;
    try {
      file = await open(input, "r");
    } catch (err) {
      throw new ValidationError(`${what}: cannot read ${JSON.stringify(input)} (${(err as NodeJS.ErrnoException).code ?? "error"})`);
    }
    try {
      const stat = await file.stat();
      if (!stat.isFile()) throw new ValidationError(`${what}: ${JSON.stringify(input)} is not a file`);
      if (stat.size > maxBytes) throw tooLarge(what, maxBytes);
      out = { bytes: new Uint8Array(await file.readFile()), filename: basename(input) };
    } finally {
      await file.close();
    }
  } else if (input instanceof Uint8Array) {
    out = { bytes: input };
  } else if (input instanceof ArrayBuffer) {
    out = { bytes: new Uint8Array(input) };
  } else if (input instanceof Blob) {
    if (input.size > maxBytes) throw tooLarge(what, maxBytes);
    out = { bytes: new Uint8Array(await input.arrayBuffer()), filename: (input as Partial<File>).name || undefined };
  } else if (input && typeof (input as ReadableStream<Uint8Array>).getReader === "function") {
    out = { bytes: await collect(readableChunks(input as ReadableStream<Uint8Array>), what, maxBytes) };
  } else if (input && typeof (input as AsyncIterable<Uint8Array>)[Symbol.asyncIterator] === "function") {
    out = { bytes: await collect(input as AsyncIterable<Uint8Array>, what, maxBytes) };
  } else {
    throw new ValidationError(`${what} must be a file path, bytes, a Blob or a stream`);
  }
  if (out.bytes.byteLength === 0) throw new ValidationError(`${what} is empty`);
  if (out.bytes.byteLength > maxBytes) throw tooLarge(what, maxBytes);
  return out;
}

async function* readableChunks(stream: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}
