/**
 * `withX402(fetch, {wallet, policy, onPayment, signInDomain})`: wallet sign-in on every request plus automatic
 * top-ups, around any fetch (the name for it). Inside the package's own stack the same two parts are used as
 * `createWalletAuth` (auth) and `x402PaymentLayer` (payment). A request it signs never carries the caller's
 * `Authorization`: with both, the service signs the wallet in and bills it, so the key would be sent for nothing.
 */
import { TimeoutError } from "../http/errors.js";
import type { FetchLike, ServiceRequestInit } from "../http/fetch-stack.js";
import { sendFollowingSafely } from "../http/redirects.js";
import { contextOf } from "../http/context.js";
import { awaitShared } from "../http/shared-wait.js";
import { X402PaymentController, type X402PaymentOptions } from "./layer.js";
import { createWalletAuth } from "./siwx.js";

export type X402Fetch = FetchLike & { controller: X402PaymentController };

export function withX402(fetchImpl: FetchLike | typeof globalThis.fetch, options: X402PaymentOptions): X402Fetch {
  const controller = new X402PaymentController(options);
  // signed on the clock of the context whose wallet state the controller shares
  const auth = createWalletAuth(options.wallet, { signInDomain: options.signInDomain, clock: contextOf(options.context).clock });
  const base = fetchImpl as FetchLike;
  const signed: FetchLike = async (input, init: ServiceRequestInit = {}) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const { service: hints, ...rest } = init;
    const headers = new Headers(rest.headers);
    // credentials only to the service's origin; its redirects are followed by hand (see sendFollowingSafely)
    const signs = hints?.auth !== false && controller.isServiceUrl(url);
    if (signs) {
      // The service bills the wallet whenever a sign-in comes, even beside an API key: a caller's Authorization
      // would only travel along (a secret sent for nothing), so it is dropped from signed requests.
      headers.delete("authorization");
      // the signer may never answer: the caller's signal still ends the call
      for (const [k, v] of Object.entries(await awaitShared(Promise.resolve(auth.headers(url, init)), rest.signal))) headers.set(k, v);
    }
    // the stack's per-request timeout hint, honoured here for plain fetch
    let signal = rest.signal ?? undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const controllerAbort = new AbortController();
    if (hints?.timeout) {
      timer = setTimeout(() => controllerAbort.abort(new TimeoutError(`no response within ${hints.timeout} ms`)), hints.timeout);
      signal = signal ? AbortSignal.any([signal, controllerAbort.signal]) : controllerAbort.signal;
    }
    try {
      const sendInit = { ...rest, headers, signal };
      if (!signs) return await base(input, sendInit);
      const origin = new URL(url).origin;
      return await sendFollowingSafely(
        base,
        url,
        sendInit,
        origin,
        (hopUrl) => auth.headers(hopUrl, init) as Promise<Record<string, string>>,
      );
    } catch (err) {
      if (controllerAbort.signal.aborted) throw controllerAbort.signal.reason as TimeoutError;
      throw err;
    } finally {
      if (timer) clearTimeout(timer);
    }
  };
  const wrapped = controller.layer()(signed) as X402Fetch;
  wrapped.controller = controller;
  return wrapped;
}
