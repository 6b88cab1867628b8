/**
 * The account routes that take Bearer API keys only (`/characters*`, `/billing/*`): a wallet's sign-in is answered
 * 401 there, so a wallet client is refused here, before any request (a 401 would also count toward the service's
 * error budget).
 */
import { ConfigurationError } from "../http/errors.js";
import type { ServiceApi } from "../api/request.js";

export function requireApiKey(client: ServiceApi, what: string, routes: string): void {
  if (client.wallet) {
    throw new ConfigurationError(
      `${what} needs an API key: the service's ${routes} routes take Bearer keys only (a wallet's sign-in is refused with 401)`,
    );
  }
}
