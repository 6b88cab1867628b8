/**
 * The crypto RPC proxy's `Idempotency-Key` (`[A-Za-z0-9_-]{1,255}`). The live proxy silently ignores a key outside
 * that pattern and runs the request as one without a key, so a retry under it could run (and bill, and broadcast) it
 * twice: the stack refuses such a key on a crypto RPC call before sending (`ValidationError`), whichever way it was
 * set (`cryptoRpc`'s option, `client.request`, `client.fetch`, an ethers or web3.js transport).
 */
import { ValidationError } from "./errors.js";
import { isCryptoRpcCall } from "./concurrency.js";
import { requestHeader } from "./request-size.js";

export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9_-]{1,255}$/;

export function malformedIdempotencyKey(): ValidationError {
  return new ValidationError(
    "idempotencyKey (Idempotency-Key) must match [A-Za-z0-9_-]{1,255}: the proxy would ignore it silently and run the " +
      "request without idempotency; nothing was sent",
  );
}

/** Throws when a crypto RPC call to `url` carries an `Idempotency-Key` the proxy would ignore. */
export function checkIdempotencyKey(url: string, headers: HeadersInit | undefined): void {
  if (!headers || !isCryptoRpcCall(url)) return;
  const key = requestHeader(headers, "idempotency-key");
  if (key !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(key)) throw malformedIdempotencyKey();
}
