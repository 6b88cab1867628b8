/**
 * A caller's wait on something shared, ended by the caller's own signal. What is waited on (a top-up in flight, a
 * wallet's gate, a network list) belongs to every caller, so it is never cancelled here: only this caller stops
 * waiting, with its abort as a typed error (abortErrorOf). No signal: the promise itself, no allocation.
 */
import { abortErrorOf } from "./errors.js";

export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | null | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) {
    promise.catch(() => undefined); // its outcome is someone else's now: never an unhandled rejection
    return Promise.reject(abortErrorOf(signal.reason));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      promise.catch(() => undefined);
      reject(abortErrorOf(signal.reason));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

/** Whether `err` is this caller's own abort (its signal fired), not a failure of what it waited on. */
export function isOwnAbort(err: unknown, signal: AbortSignal | null | undefined): boolean {
  return signal?.aborted === true && (err === signal.reason || (err as { cause?: unknown } | null)?.cause === signal.reason);
}
