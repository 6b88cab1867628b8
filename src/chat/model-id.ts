/**
 * Model feature suffixes: `<model>:<key>=<value>&<key2>=<value2>` (values URL-encoded). The service applies
 * them like `service_parameters` members (overriding the body's). `enable_e2ee` and `enable_x_search` are not
 * accepted as suffix keys, so they are refused here before any request.
 */
import { ValidationError } from "../http/errors.js";
import {
  SERVICE_PARAMETER_KEYS,
  serviceParameterWireName,
  validateServiceParameters,
  type ServiceParameterKey,
  type ServiceParameters,
} from "./service-parameters.js";

const NOT_ACCEPTED_AS_SUFFIX: ReadonlySet<ServiceParameterKey> = new Set(["enableE2ee", "enableXSearch"]);

export interface ParsedModelId {
  /** the model id without suffix */
  id: string;
  /** the suffix members as camelCase service parameters */
  serviceParameters: ServiceParameters;
  /** the suffix members as written (wire names, decoded string values) */
  suffix: Record<string, string>;
}

/** wire name -> camelCase key, for the keys a suffix may carry */
function suffixKeyMap(brand?: string): Map<string, ServiceParameterKey> {
  const map = new Map<string, ServiceParameterKey>();
  for (const key of SERVICE_PARAMETER_KEYS) {
    if (!NOT_ACCEPTED_AS_SUFFIX.has(key)) map.set(serviceParameterWireName(key, brand), key);
  }
  return map;
}

function coerce(key: ServiceParameterKey, raw: string): unknown {
  if (key === "enableWebSearch" || key === "characterSlug") return raw;
  if (raw === "true") return true;
  if (raw === "false") return false;
  return raw; // left as a string: the schema reports it as the wrong type
}

/** URL-decodes one half of a suffix member; a malformed `%` escape is a ValidationError, not a URIError. */
function decodeMember(raw: string, pair: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new ValidationError(
      `model suffix member ${JSON.stringify(pair)} has a malformed percent-escape (% must be followed by two hex digits of UTF-8)`,
    );
  }
}

/** Splits and validates a model id with an optional feature suffix. Throws `ValidationError`. */
export function parseModelId(model: string, brand?: string): ParsedModelId {
  if (typeof model !== "string" || model.trim() === "") throw new ValidationError("model must be a non-empty string");
  const colon = model.indexOf(":");
  if (colon === -1) return { id: model, serviceParameters: {}, suffix: {} };
  const id = model.slice(0, colon);
  if (!id) throw new ValidationError(`model ${JSON.stringify(model)} has a suffix but no model id`);
  const keys = suffixKeyMap(brand);
  const suffix: Record<string, string> = {};
  const camel: Record<string, unknown> = {};
  const rest = model.slice(colon + 1);
  if (rest === "") return { id, serviceParameters: {}, suffix };
  for (const pair of rest.split("&")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new ValidationError(`model suffix member ${JSON.stringify(pair)} is not key=value`);
    const wire = decodeMember(pair.slice(0, eq), pair);
    const value = decodeMember(pair.slice(eq + 1), pair);
    const key = keys.get(wire);
    if (!key) {
      throw new ValidationError(`model suffix key ${JSON.stringify(wire)} is not accepted; allowed: ${[...keys.keys()].join(", ")}`);
    }
    suffix[wire] = value;
    camel[key] = coerce(key, value);
  }
  return { id, serviceParameters: validateServiceParameters(camel, `model suffix of ${JSON.stringify(model)}`), suffix };
}

/**
 * Builds `<model>:<key>=<value>&...` from camelCase service parameters, validated. Members already in the
 * model's suffix are kept unless `params` overrides them.
 */
export function buildModelId(model: string, params: ServiceParameters, brand?: string): string {
  const parsed = parseModelId(model, brand);
  const valid = validateServiceParameters(params, "model suffix parameters");
  const members: Record<string, string> = { ...parsed.suffix };
  for (const key of SERVICE_PARAMETER_KEYS) {
    const value = valid[key];
    if (value === undefined) continue;
    if (NOT_ACCEPTED_AS_SUFFIX.has(key)) {
      throw new ValidationError(
        `${key} (${serviceParameterWireName(key, brand)}) is not accepted as a model suffix; pass it in serviceParameters`,
      );
    }
    members[serviceParameterWireName(key, brand)] = String(value);
  }
  const suffix = Object.entries(members)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join("&");
  return suffix ? `${parsed.id}:${suffix}` : parsed.id;
}
