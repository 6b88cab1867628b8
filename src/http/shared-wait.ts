/**
 * Waiting on a lookup that several callers share (the `/models` records, the default image model, a model's
 * voices) under one caller's signal: the lookup itself runs without any caller's signal, so one caller's abort
 * ends only that caller's wait, never the others'.
 */
import { abortErrorOf } from "./errors.js";

/** Waits for `lookup` until `signal` aborts (then rejects with the caller's typed abort error). */
export function awaitShared<T>(lookup: Promise<T>, signal: AbortSignal | null | undefined): Promise<T> {
  if (!signal) return lookup;
  if (signal.aborted) return Promise.reject(abortErrorOf(signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortErrorOf(signal.reason));
    signal.addEventListener("abort", onAbort, { once: true });
    lookup.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** Whether `err` is this caller's own abort (its signal fired), not a failure of what it waited on. */
export function isOwnAbort(err: unknown, signal: AbortSignal | null | undefined): boolean {
  return signal?.aborted === true && (err === signal.reason || (err as { cause?: unknown } | null)?.cause === signal.reason);
}
