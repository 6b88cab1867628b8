/**
 * The domain a wallet sign-in names. The service checks it against its own hosts (after stripping protocol, port and
 * path), not against the host a request reached, so a client behind a proxy or a custom base URL must name the
 * service's host (`signInDomain`). Kept free of the signing modules: stacks check the option when they are built.
 */
import { ConfigurationError } from "../http/errors.js";

const HOST = /^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;
const IPV6 = /^\[[0-9a-f:.]+\]$/i;

/**
 * `signInDomain` as EIP-4361 wants it (a host, with a port when one was given): a bare host (`api.example.ai`), a
 * host with port, or a URL whose host is taken. Anything else is a `ConfigurationError`, before any request.
 */
export function normalizeSignInDomain(value: unknown): string {
  if (typeof value !== "string" || value.trim() === "")
    throw new ConfigurationError("signInDomain must be a host name such as api.example.ai");
  const raw = value.trim();
  let host: string;
  let port = "";
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new ConfigurationError(`signInDomain is not a host name or URL: ${JSON.stringify(raw.slice(0, 100))}`);
    }
    if (url.username || url.password) throw new ConfigurationError("signInDomain must not carry credentials");
    host = url.hostname;
    port = url.port;
  } else {
    const m = /^(\[[^\]]+\]|[^:/?#]+)(?::(\d{1,5}))?$/.exec(raw);
    if (!m) throw new ConfigurationError(`signInDomain is not a host name or URL: ${JSON.stringify(raw.slice(0, 100))}`);
    host = m[1]!;
    port = m[2] ?? "";
  }
  if (!(HOST.test(host) || IPV6.test(host)) || (port !== "" && Number(port) > 65_535)) {
    throw new ConfigurationError(`signInDomain is not a host name: ${JSON.stringify(raw.slice(0, 100))}`);
  }
  return `${host.toLowerCase()}${port ? `:${port}` : ""}`;
}
