/**
 * Who calls, on every attempt: the credential headers (an API key, or a wallet's sign-in made afresh for each
 * attempt, as a SIWX header is single use) beside the stack's default headers, sent only to the service's own
 * origin. The service's `Date` sets the clock of the stack's context; a clock-sensitive sign-in refused with a 401 that a fresh one
 * passes (`staleSignIn401` in retry-rules.ts) is signed again and re-sent once, here: inside the retry loop, the
 * pacing, the place in flight and the abuse guard, since it is the same request holding its place (going round the
 * retry loop would count it twice at each of them).
 */
import { ConfigurationError } from "../errors.js";
import { ENV_API_KEY, readEnv } from "../config.js";
import { describe, isPlainObject } from "../options.js";
import type { ServiceContext } from "../context.js";
import { sameOrigin } from "../redirects.js";
import { answerWithText } from "../refusals.js";
import { SIGN_IN_RESENT_HEADER } from "../sign-in-refusals.js";
import { clockWasOff, mayResignAfter401, staleSignIn401 } from "../retry-rules.js";
import { urlOf } from "../responses.js";
import type { FetchLayer, ServiceRequestInit } from "../types.js";
import { withResign } from "./redirects.js";
import { awaitShared } from "../shared-wait.js";

/** Supplies the credential headers of one attempt (an API key, or a freshly signed SIWX header). */
export interface AuthProvider {
  /** a label for logs and for sharing limiters; never the secret itself */
  readonly identity: string;
  /** `wallet`: a wallet's sign-in (its requests count toward the wallet's cap of requests in flight) */
  readonly kind?: "apiKey" | "wallet";
  /**
   * true when the headers carry a time the service checks against its own clock (a SIWX `issuedAt`, signed with
   * its context's clock): a 401 whose `Date` shows the clock used was off is then signed again once.
   */
  readonly clockSensitive?: boolean;
  headers(url: string, init: ServiceRequestInit): Promise<Record<string, string>> | Record<string, string>;
}

export interface SignInLayerOptions {
  /** API key (else `SERVICE_API_KEY`). Ignored when `auth` is given. */
  apiKey?: string;
  /** a credential provider other than the API key (wallet sign-in) */
  auth?: AuthProvider;
  /** extra headers on every request */
  defaultHeaders?: Record<string, string>;
}

/** Short, non-reversible label of a key, so limiters can be shared without keeping the key around. */
function fingerprint(secret: string): string {
  // Two FNV-1a passes (64 bits): enough to tell a process's keys apart, even many thousands of tenants; not a
  // security measure (the label is never sent). node:crypto would do, but this floor also runs outside Node.
  let h1 = 0x811c9dc5;
  let h2 = 0x050c5d1f;
  for (let i = 0; i < secret.length; i++) {
    const c = secret.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x01000193) ^ (h1 >>> 7);
  }
  return `key:${(h1 >>> 0).toString(16).padStart(8, "0")}${(h2 >>> 0).toString(16).padStart(8, "0")}`;
}

export class ApiKeyAuth implements AuthProvider {
  readonly identity: string;
  readonly #header: Record<string, string>;
  constructor(apiKey: string) {
    // printable ASCII only: anything else would fail later inside `Headers`, untyped
    if (typeof apiKey !== "string" || !/^[\x21-\x7e]+$/.test(apiKey)) {
      throw new ConfigurationError("apiKey must be a non-empty string of printable ASCII without spaces");
    }
    this.identity = fingerprint(apiKey);
    this.#header = { authorization: `Bearer ${apiKey}` };
  }
  headers(): Record<string, string> {
    return this.#header;
  }
  toJSON() {
    return { identity: this.identity };
  }
}

/** The credential provider of a stack: `auth`, else the API key (else `SERVICE_API_KEY`), else none. */
export function authOf(options: Pick<SignInLayerOptions, "apiKey" | "auth">): AuthProvider | undefined {
  if (options.auth) return options.auth;
  const apiKey = options.apiKey ?? readEnv(ENV_API_KEY);
  return apiKey ? new ApiKeyAuth(apiKey) : undefined;
}

/** Checks `defaultHeaders`: an object of valid header names to string values (the error names a header, never its value). */
export function checkDefaultHeaders(headers: unknown): void {
  if (headers === undefined) return;
  if (!isPlainObject(headers))
    throw new ConfigurationError(`defaultHeaders must be an object of header names to values (got ${describe(headers)})`);
  for (const [key, value] of Object.entries(headers)) {
    try {
      if (typeof value !== "string") throw new TypeError("not a string");
      new Headers([[key, value]]);
    } catch {
      // the name only: a header value may be a secret
      throw new ConfigurationError(
        `defaultHeaders[${JSON.stringify(key)}] is not a valid header (a token name and a string value without CR/LF)`,
      );
    }
  }
}

/**
 * A sign-in's headers, waited for under the request's signal: a wallet's signer may never answer (a remote signer
 * down, a browser wallet whose user walked away), and the call must still end at its caller's abort or deadline.
 * An API key's headers come synchronously: no promise for them.
 */
function signed(
  headers: Promise<Record<string, string>> | Record<string, string>,
  signal: AbortSignal | null | undefined,
): Promise<Record<string, string>> | Record<string, string> {
  return headers instanceof Promise ? awaitShared(headers, signal) : headers;
}

export function signIn(
  options: Pick<SignInLayerOptions, "defaultHeaders">,
  ctx: { auth: AuthProvider | undefined; origin: string; service: ServiceContext },
): FetchLayer {
  checkDefaultHeaders(options.defaultHeaders);
  const { auth, origin } = ctx;
  // the clock of the stack's context: its answers teach it, its wallet sign-ins read it
  const serviceClock = ctx.service.clock;
  const defaultHeaders = options.defaultHeaders;
  return (next) =>
    async (input, init = {}) => {
      const url = urlOf(input);
      const hints = init.service;
      const signs = auth !== undefined && hints?.auth !== false && sameOrigin(url, origin);
      // the service-clock offset this attempt is signed with (read as the headers are made)
      const signedOffset = signs && auth.clockSensitive ? serviceClock.offset(origin) : undefined;
      const authHeaders = signs ? await signed(auth.headers(url, init), init.signal) : undefined;
      let headers: Headers | undefined;
      if (authHeaders || defaultHeaders || init.headers) {
        headers = new Headers(init.headers);
        if (defaultHeaders) for (const k in defaultHeaders) if (!headers.has(k)) headers.set(k, defaultHeaders[k]!);
        if (authHeaders) {
          // the stack owns the credentials: a caller's own Authorization (the openai SDK always sends one) goes
          headers.delete("authorization");
          for (const k in authHeaders) headers.set(k, authHeaders[k]!);
        }
      }
      // each hop of a followed redirect is signed afresh (a SIWX header is single use): see redirects
      const sendInit = signs ? withResign(init, async (hopUrl: string) => auth.headers(hopUrl, init)) : init;
      const send = async (h: Headers | undefined) => {
        const response = await next(h ? url : input, { ...sendInit, headers: h });
        // the service's Date corrects the clock sign-ins use (only they need it: an API key skips the parse)
        if (auth?.clockSensitive && sameOrigin(response.url || url, origin)) serviceClock.observe(origin, response.headers.get("date"));
        return response;
      };
      const response = await send(headers);
      // (an API key's answers stop at the first test: signedOffset is only set for a clock-sensitive sign-in)
      if (!mayResignAfter401(response.status, signedOffset, init.body)) return response;
      if (!clockWasOff(signedOffset!, serviceClock.offset(origin))) {
        // our clock was right: the refusal's (small) body says whether a fresh header passes; read once, it is
        // handed back whole when not
        const text = await response.text().catch(() => "");
        if (!staleSignIn401(text)) return answerWithText(response, text);
      } else {
        // refused while our clock was off
        await response.body?.cancel().catch(() => undefined);
      }
      // once more, freshly signed (a new nonce) with the service's time
      const again = new Headers(headers);
      const fresh = await signed(auth!.headers(url, init), init.signal);
      for (const k in fresh) again.set(k, fresh[k]!);
      const retried = await send(again);
      if (retried.status !== 401) return retried;
      // refused again: the typed error says the re-sign was tried (SIGN_IN_RESENT_HEADER)
      const text = await retried.text().catch(() => "");
      const marked = new Headers(retried.headers);
      marked.set(SIGN_IN_RESENT_HEADER, "1");
      return answerWithText(retried, text, marked);
    };
}
