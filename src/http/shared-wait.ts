/**
 * Waiting on a lookup that several callers share (the `/models` records, the default image model, a model's
 * voices) under one caller's signal: the lookup itself runs without any caller's signal, so one caller's abort
 * ends only that caller's wait, never the others'.
 */
import { abortErrorOf } from "./errors.js";

/** Waits for `lookup` until `signal` aborts (then rejects with the caller's typed abort error). */
export function awaitShared<T>(lookup: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return lookup;
  if (signal.aborted) return Promise.reject(abortErrorOf(signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortErrorOf(signal.reason));
    signal.addEventListener("abort", onAbort, { once: true });
    lookup.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
