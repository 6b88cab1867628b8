/**
 * Redirects of a credentialed request, followed by hand (same origin, each hop signed afresh) or refused (another
 * origin): see redirects.ts. A request without credentials is passed on as it is (its runtime follows them).
 */
import { sendFollowingSafely } from "../redirects.js";
import { urlOf } from "../responses.js";
import type { FetchLayer, ServiceRequestInit } from "../types.js";

type Resign = (hopUrl: string) => Promise<Record<string, string> | undefined>;

/** How a redirect's next hop is signed, handed from the sign-in layer on the request's hints (not a public hint). */
const RESIGN = Symbol("serviceResign");

/** `init` with the signer of its redirect hops. */
export function withResign(init: ServiceRequestInit, resign: Resign): ServiceRequestInit {
  return { ...init, service: { ...init.service, [RESIGN]: resign } as ServiceRequestInit["service"] };
}

export function redirects(ctx: { origin: string }): FetchLayer {
  const origin = ctx.origin;
  return (next) => (input, init) => {
    const headers = init?.headers;
    if (!(headers instanceof Headers)) return next(input, init);
    const resign = (init!.service as { [RESIGN]?: Resign } | undefined)?.[RESIGN];
    return sendFollowingSafely(next, urlOf(input), { ...init, headers }, origin, resign);
  };
}
