/**
 * Reading a whole response body. A body that breaks off (the connection cut before its Content-Length was met)
 * or does not decode (a false `content-encoding: gzip`) makes undici throw a bare `TypeError: terminated`;
 * here it is a ResponseFormatError that keeps the cause. The caller's abort stays an AbortError/TimeoutError,
 * and the stack's own typed errors pass unchanged.
 */
import { ResponseFormatError, ServiceError, abortErrorOf } from "./errors.js";
import type { ServiceResponseHeaders } from "./headers.js";

export interface ReadTextOptions {
  /** what is read, for the message (e.g. "/models", "the chat completion") */
  what: string;
  signal?: AbortSignal | null;
  headers?: ServiceResponseHeaders;
}

export async function readResponseText(response: Response, options: ReadTextOptions): Promise<string> {
  return readBody(response, options, () => response.text());
}

/** `readResponseText` for a binary body (audio, images): the same typed errors. */
export async function readResponseBytes(response: Response, options: ReadTextOptions): Promise<Uint8Array> {
  return readBody(response, options, async () => new Uint8Array(await response.arrayBuffer()));
}

async function readBody<T>(response: Response, options: ReadTextOptions, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    if (options.signal?.aborted) throw abortErrorOf(options.signal.reason);
    const cause = err as { message?: string; cause?: { message?: string; code?: string } };
    const detail = [cause?.message, cause?.cause?.code ?? cause?.cause?.message].filter(Boolean).join(": ");
    throw new ResponseFormatError(`the body of ${options.what} could not be read (${detail || String(err)})`, {
      status: response.status,
      headers: options.headers,
      cause: err,
    });
  }
}
