/**
 * What a refused wallet sign-in (SIWX, 401) means. The live service names why on inference routes: `code`
 * `X402_SIGN_IN_<why>` (`EXPIRED`, `NONCE_REUSED`, `FUTURE_TIMESTAMP`, `INVALID_SIGNATURE`, `DOMAIN_MISMATCH`, …);
 * the seed contract answers `X402_INVALID_SIGN_IN` to them all. A client must survive both.
 *
 * - A header that was too old when it arrived, ahead of the service's clock, or whose nonce was already used is
 *   cured by a fresh one: the transport signs again once (fresh nonce, `issuedAt` on the service's clock) and
 *   re-sends, unless the request's body is a stream (it cannot be sent twice).
 * - Any other refusal (a signature that does not verify, a domain that is not the service's, the seed's one code)
 *   would be refused again: it is the caller's `AuthenticationError`, saying what to do.
 */

/** The codes a freshly signed header cures: signed again once and re-sent. */
const CURED_BY_A_FRESH_HEADER: ReadonlySet<string> = new Set([
  "X402_SIGN_IN_EXPIRED",
  "X402_SIGN_IN_NONCE_REUSED",
  "X402_SIGN_IN_FUTURE_TIMESTAMP",
]);

/**
 * Set by the transport on the answer to a sign-in it signed again and re-sent, when that answer is a 401 too, so
 * that the typed error can say the re-sign was tried (the layers between rebuild responses, but keep headers).
 */
export const SIGN_IN_RESENT_HEADER = "x-client-sign-in-resent";

/** The `code` of a 401's body text (JSON `{error, code}`), when it has one. */
function codeOf(text: string): string | undefined {
  if (!text.includes("X402_SIGN_IN_")) return undefined;
  try {
    const code = (JSON.parse(text) as { code?: unknown } | null)?.code;
    return typeof code === "string" ? code : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a refused sign-in's body names a cause a freshly signed header cures. */
export function curedByFreshSignIn(text: string): boolean {
  const code = codeOf(text);
  return code !== undefined && CURED_BY_A_FRESH_HEADER.has(code);
}

/**
 * What to do about a refused sign-in with this code, for the error's message (undefined: nothing to add). Never
 * the header or any secret: only the code and the client's own advice.
 */
export function signInAdvice(code: string | undefined, resent: boolean): string | undefined {
  const notResent =
    "the client did not re-send this request, since its body is a stream or its auth provider is not clockSensitive: " +
    "sign a fresh header and send it again";
  switch (code) {
    case "X402_SIGN_IN_EXPIRED":
    case "X402_SIGN_IN_FUTURE_TIMESTAMP":
      return resent
        ? "re-signed once with a fresh nonce and issuedAt on the service's clock, and refused again: check the machine's clock"
        : `the sign-in was outside its time window; ${notResent}`;
    case "X402_SIGN_IN_NONCE_REUSED":
      return resent
        ? "re-signed once with a fresh nonce and refused again: check the machine's clock, and that nothing between " +
            "this client and the service replays its requests"
        : `each sign-in works once; ${notResent}`;
    case "X402_SIGN_IN_INVALID_SIGNATURE":
      return (
        "the wallet's key does not sign for its address; smart-contract wallets, which sign with EIP-1271, are not " +
        "supported by this client"
      );
    case "X402_SIGN_IN_DOMAIN_MISMATCH":
      return "the baseUrl's host is not the one the service signs for: use the service's own host in baseUrl";
    default:
      return undefined;
  }
}
