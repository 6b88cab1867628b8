/**
 * Options shared by every face of the package (ChatService, ServiceClient, crypto tools),
 * environment variables, and the one place where the brand decides wire names.
 */
import { ConfigurationError } from "./errors.js";

export const DEFAULT_BRAND = "service";
export const ENV_API_KEY = "SERVICE_API_KEY";
export const ENV_BASE_URL = "SERVICE_BASE_URL";

/** Wire names that carry the deployment's brand. Nothing else in the code spells the brand. */
export interface BrandNames {
  brand: string;
  /** request/response body member: `service_parameters` */
  parameters: string;
  /** header prefix: `x-service-` */
  headerPrefix: string;
  /** service_parameters member: `include_service_system_prompt` */
  includeSystemPrompt: string;
  /** tool call name carrying search results: `service_web_search_documents` */
  webSearchDocumentsTool: string;
  /** crypto RPC pricing headers: `x-service-rpc-credits`, `x-service-rpc-cost-usd` */
  rpcCreditsHeader: string;
  rpcCostUsdHeader: string;
}

const BRAND_RE = /^[a-z][a-z0-9]*$/;
const brandCache = new Map<string, BrandNames>();

export function brandNames(brand: string = DEFAULT_BRAND): BrandNames {
  let names = brandCache.get(brand);
  if (names) return names;
  if (!BRAND_RE.test(brand)) {
    throw new ConfigurationError(`brand must be lowercase letters and digits (got ${JSON.stringify(brand)})`);
  }
  names = {
    brand,
    parameters: `${brand}_parameters`,
    headerPrefix: `x-${brand}-`,
    includeSystemPrompt: `include_${brand}_system_prompt`,
    webSearchDocumentsTool: `${brand}_web_search_documents`,
    rpcCreditsHeader: `x-${brand}-rpc-credits`,
    rpcCostUsdHeader: `x-${brand}-rpc-cost-usd`,
  };
  // a deployment has one brand; the cap only stops a stream of odd ones from growing the cache (the rest are rebuilt)
  if (brandCache.size < 64) brandCache.set(brand, names);
  return names;
}

export function readEnv(name: string): string | undefined {
  // `process` may be absent in browsers and edge runtimes.
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const value = env?.[name];
  return value === undefined || value === "" ? undefined : value;
}

/** Normalizes a base URL: must be http(s), no trailing slash. The base includes `/api/v1`. */
export function normalizeBaseUrl(raw: string | undefined): string {
  const value = raw ?? readEnv(ENV_BASE_URL);
  if (!value) {
    throw new ConfigurationError(
      `no base URL: pass \`baseUrl\` (it includes /api/v1) or set ${ENV_BASE_URL}; for a local service run \`npx langchain-service-emulator\``,
    );
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigurationError(`baseUrl is not a valid URL: ${JSON.stringify(redactUserInfo(value))}`);
  }
  if (url.username || url.password) {
    throw new ConfigurationError("baseUrl must not carry credentials; pass `apiKey` instead");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigurationError(`baseUrl must be http(s) (got ${JSON.stringify(url.protocol)})`);
  }
  // paths are appended to the base: a query or fragment would end up in the middle of every URL
  // (and a key in a query string would travel in every request line and log)
  if (url.search || url.hash) {
    throw new ConfigurationError("baseUrl must not carry a query string or fragment; pass `apiKey` for credentials");
  }
  return url.toString().replace(/\/+$/, "");
}

/** `scheme://user:pass@host` → `scheme://***@host`, for messages about a URL that did not parse. */
function redactUserInfo(value: string): string {
  return value.replace(/^([^:/?#]*:\/\/)[^/?#]*@/, "$1***@");
}
