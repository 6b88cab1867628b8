/**
 * Fills a JSON Schema from a prompt: the emulator's "structured output" and its tool-call arguments.
 * Rules (deterministic, documented for tests):
 * - a property whose name appears in the prompt followed by a value ("city: Paris", "age is 30") takes it;
 * - strings by name: address, wallet, account, owner, contract -> an EVM address from the prompt, hash or tx ->
 *   a tx hash, network/chain/slug -> a network slug, method -> an inferred JSON-RPC method, city/location/
 *   place... -> quoted text (not an identifier) or the last capitalized words (after "in"/"at"/... first),
 *   name/person/company -> quoted text or the last capitalized word, query/question/text/... -> quoted text or the prompt;
 * - numbers: the prompt's numbers in order; enums: a value mentioned in the prompt, else the first value;
 * - arrays: one item (all addresses for address arrays; inferred JSON-RPC params for `params`);
 * - nested objects recursively; `$ref`, `anyOf`/`oneOf` (first branch), nullable types are understood.
 * In `fallback` mode every property gets a value (structured output must always conform); otherwise a
 * required property that the prompt cannot fill makes the fill fail (the planner then skips the tool).
 */
import { identifierWords, inferRpcCall, type PromptFacts } from "./facts.js";

export type JsonSchema = { [key: string]: unknown };

export interface FillOptions {
  /** give every property a value even without evidence in the prompt */
  fallback: boolean;
  /** the question, used for free-text string properties */
  question: string;
}

export interface FillResult {
  value: unknown;
  /** filled from specific evidence (an address, a hash, a slug, a mentioned enum, a named value) */
  strong: boolean;
  /** multi-valued fact kinds the fill consumed (the planner may call once per value) */
  used: Set<"addresses" | "txHashes" | "slugs">;
}

interface Ctx extends FillOptions {
  facts: PromptFacts;
  root: JsonSchema;
  numberIndex: number;
  strong: boolean;
  used: Set<"addresses" | "txHashes" | "slugs">;
  /** addresses already given to a property of this fill (two address properties take two addresses) */
  claimed: Set<string>;
  depth: number;
}

const NO_VALUE = Symbol("no value");
type Value = unknown | typeof NO_VALUE;

function isObject(v: unknown): v is JsonSchema {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function resolve(schema: unknown, ctx: Ctx): JsonSchema {
  let s: JsonSchema = isObject(schema) ? schema : {};
  for (let hops = 0; typeof s.$ref === "string" && hops < 10; hops++) {
    const path = s.$ref.replace(/^#\/?/, "").split("/").filter(Boolean);
    let target: unknown = ctx.root;
    for (const seg of path) target = isObject(target) ? target[seg.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined;
    s = isObject(target) ? target : {};
  }
  const branches = (s.anyOf ?? s.oneOf) as unknown;
  if (Array.isArray(branches) && branches.length > 0) {
    const nonNull = branches.find((b) => !(isObject(b) && b.type === "null")) ?? branches[0];
    const { anyOf: _a, oneOf: _o, ...rest } = s;
    return { ...rest, ...resolve(nonNull, ctx) };
  }
  if (Array.isArray(s.allOf)) {
    return Object.assign({}, ...(s.allOf as unknown[]).map((part) => resolve(part, ctx))) as JsonSchema;
  }
  return s;
}

function schemaType(s: JsonSchema): string | undefined {
  if (Array.isArray(s.type)) return (s.type as unknown[]).find((t) => t !== "null") as string | undefined;
  if (typeof s.type === "string") return s.type;
  if (s.properties) return "object";
  if (s.items) return "array";
  if (Array.isArray(s.enum)) return typeof s.enum[0];
  return undefined;
}

/** "city: Paris", "name is Alice Smith", "age = 30": the value right after the property's name. */
function namedValue(name: string, ctx: Ctx): string | undefined {
  const spellings = new Set([name, identifierWords(name).join(" ")]);
  for (const spelling of spellings) {
    if (spelling.length < 2) continue;
    // the name and separator match case-insensitively; the value (with "Alice Smith"-style capitalized
    // continuation words) is read case-sensitively from where they end
    const head = new RegExp(`\\b${escapeRe(spelling)}\\b\\s*(?:is|was|:|=|equals|of)\\s*`, "i").exec(ctx.facts.text);
    if (!head) continue;
    const rest = ctx.facts.text.slice(head.index + head[0].length);
    const m = /^(?:"([^"]+)"|'([^']+)'|(-?\d+(?:\.\d+)?)(?![\w])|([A-Za-z0-9_@.#/-]+(?:\s+[A-Z][a-z]+)*))/.exec(rest);
    const v = m?.[1] ?? m?.[2] ?? m?.[3] ?? m?.[4];
    if (v) return v.replace(/[.,;!?]+$/, "");
  }
  return undefined;
}

function nextNumber(ctx: Ctx): number | undefined {
  const n = ctx.facts.numbers[ctx.numberIndex];
  if (n !== undefined) ctx.numberIndex++;
  return n;
}

function mentionedEnum(values: unknown[], ctx: Ctx): unknown {
  for (const v of values) {
    if (typeof v === "string" && v && new RegExp(`\\b${escapeRe(v.toLowerCase())}\\b`).test(ctx.facts.lower)) return v;
    if (typeof v === "number" && ctx.facts.numbers.includes(v)) return v;
  }
  return NO_VALUE;
}

function fillString(name: string, s: JsonSchema, ctx: Ctx): Value {
  const lname = name.toLowerCase();
  const hint = `${lname} ${typeof s.description === "string" ? s.description.toLowerCase() : ""}`;
  const f = ctx.facts;
  if (/hash|^tx|txid|transaction/.test(lname) && f.txHashes[0]) {
    ctx.used.add("txHashes");
    ctx.strong = true;
    return f.txHashes[0];
  }
  if (/address|wallet|account|owner|holder|contract|token|asset|recipient|sender|^to$|^from$/.test(lname) && f.addresses[0]) {
    ctx.strong = true;
    // "token 0x…", "owner: 0x…": the address right after the property's name is that property's
    const words = identifierWords(name).map(escapeRe).join("[\\s_-]*");
    const named = new RegExp(`\\b${words}\\b\\W{0,4}(0x[0-9a-fA-F]{40})\\b`, "i").exec(f.text)?.[1];
    const unclaimed = f.addresses.find((a) => !ctx.claimed.has(a));
    // two address properties (token, owner) never share one address unless the prompt says so
    if (!named && !unclaimed && !ctx.fallback) return NO_VALUE;
    const address = named ?? unclaimed ?? f.addresses[0]!;
    if (!named) ctx.used.add("addresses");
    ctx.claimed.add(address);
    return address;
  }
  if (/network|chain|slug/.test(lname) && f.slugs[0]) {
    ctx.used.add("slugs");
    ctx.strong = true;
    return f.slugs[0];
  }
  if (lname === "method" && /rpc|method|json/.test(hint)) {
    ctx.strong = true;
    return inferRpcCall(f).method;
  }
  const named = namedValue(name, ctx);
  if (named !== undefined) {
    ctx.strong = true;
    return named;
  }
  if (/city|location|place|country|town|region|where/.test(lname)) {
    // quoted text that is not an identifier ('get_current_weather' names a tool, not a place), else the
    // last capitalized words after "in"/"at"/..., else the last capitalized words
    const v = f.quoted.find((q) => !/^[A-Za-z]\w*_\w+$/.test(q)) ?? f.places[0];
    if (v) return v;
  }
  if (/name|person|company/.test(lname)) {
    const v = f.quoted[0] ?? f.capitalized[f.capitalized.length - 1];
    if (v) return v;
  }
  if (/query|^q$|search|topic|term|question|text|prompt|input|keyword|message|content|description/.test(lname)) {
    return f.quoted[0] ?? ctx.question;
  }
  if (f.quoted[0]) return f.quoted[0];
  if (!ctx.fallback) return NO_VALUE;
  switch (s.format) {
    case "date-time":
      return "2025-01-01T00:00:00Z";
    case "date":
      return "2025-01-01";
    case "email":
      return "user@example.org";
    case "uri":
    case "url":
      return "https://example.org/";
    case "uuid":
      return "00000000-0000-4000-8000-000000000000";
  }
  const base = `${name}: ${ctx.question}`.trim();
  const min = typeof s.minLength === "number" ? s.minLength : 0;
  const max = typeof s.maxLength === "number" ? s.maxLength : Infinity;
  return base.padEnd(min, ".").slice(0, max);
}

function fillNumber(name: string, s: JsonSchema, integer: boolean, ctx: Ctx): Value {
  const named = namedValue(name, ctx);
  let n: number | undefined = named !== undefined && /^-?\d+(\.\d+)?$/.test(named) ? Number(named) : nextNumber(ctx);
  if (n === undefined) {
    if (!ctx.fallback) return NO_VALUE;
    n = typeof s.default === "number" ? s.default : 0;
  }
  if (typeof s.minimum === "number" && n < s.minimum) n = s.minimum;
  if (typeof s.maximum === "number" && n > s.maximum) n = s.maximum;
  return integer ? Math.trunc(n) : n;
}

function fillArray(name: string, s: JsonSchema, ctx: Ctx): Value {
  const items = resolve(s.items, ctx);
  const itemType = schemaType(items);
  if (name.toLowerCase() === "params") {
    ctx.strong = true;
    return inferRpcCall(ctx.facts).params;
  }
  if (itemType === "string" && /address|wallet|account/.test(name.toLowerCase()) && ctx.facts.addresses.length > 0) {
    ctx.strong = true;
    return [...ctx.facts.addresses];
  }
  const item = fillValue(name.replace(/s$/, ""), items, ctx);
  if (item === NO_VALUE) return ctx.fallback ? [] : NO_VALUE;
  const count = Math.max(1, typeof s.minItems === "number" ? s.minItems : 1);
  return Array.from({ length: count }, () => item);
}

function fillObject(s: JsonSchema, ctx: Ctx): Value {
  const props = isObject(s.properties) ? s.properties : {};
  const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
  const out: Record<string, unknown> = {};
  if (ctx.depth > 8) return out;
  ctx.depth++;
  try {
    for (const [key, propSchema] of Object.entries(props)) {
      const before = ctx.strong;
      ctx.strong = false;
      const v = fillValue(key, propSchema, ctx);
      const strongHere = ctx.strong;
      ctx.strong = before || strongHere;
      if (v === NO_VALUE) {
        if (required.has(key)) return NO_VALUE;
        continue;
      }
      // tool arguments: optional properties only when the prompt really says something about them
      if (!ctx.fallback && !required.has(key) && !strongHere) continue;
      out[key] = v;
    }
    return out;
  } finally {
    ctx.depth--;
  }
}

function fillValue(name: string, raw: unknown, ctx: Ctx): Value {
  const s = resolve(raw, ctx);
  if ("const" in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) {
    const m = mentionedEnum(s.enum, ctx);
    if (m !== NO_VALUE) {
      ctx.strong = true;
      return m;
    }
    if ("default" in s) return s.default;
    return ctx.fallback ? s.enum[0] : NO_VALUE;
  }
  switch (schemaType(s)) {
    case "string":
      return fillString(name, s, ctx);
    case "integer":
      return fillNumber(name, s, true, ctx);
    case "number":
      return fillNumber(name, s, false, ctx);
    case "boolean": {
      const named = namedValue(name, ctx);
      if (named !== undefined && /^(true|false|yes|no)$/i.test(named)) return /^(true|yes)$/i.test(named);
      return typeof s.default === "boolean" ? s.default : ctx.fallback ? false : NO_VALUE;
    }
    case "array":
      return fillArray(name, s, ctx);
    case "object":
      return fillObject(s, ctx);
    case "null":
      return null;
    default:
      return ctx.fallback ? fillString(name, s, ctx) : NO_VALUE;
  }
}

/** Fills `schema` from the prompt facts; undefined when a required value cannot be found (non-fallback mode). */
export function fillSchema(schema: unknown, facts: PromptFacts, options: FillOptions): FillResult | undefined {
  const root = isObject(schema) ? schema : {};
  const ctx: Ctx = { ...options, facts, root, numberIndex: 0, strong: false, used: new Set(), claimed: new Set(), depth: 0 };
  const value = fillValue("value", root, ctx);
  if (value === NO_VALUE) return undefined;
  // a call that took two distinct addresses (token and owner) is one call, not one per address
  if (ctx.claimed.size > 1) ctx.used.delete("addresses");
  return { value, strong: ctx.strong, used: ctx.used };
}

/** Required property names of an object schema (after `$ref`). */
export function requiredProperties(schema: unknown): string[] {
  const s = isObject(schema) ? schema : {};
  return Array.isArray(s.required) ? (s.required as unknown[]).filter((r): r is string => typeof r === "string") : [];
}

/**
 * A JSON schema that a system or developer message asks the answer to follow ("… valid against this JSON schema:
 * {…}"), as a client without response formats sends it: the first balanced `{…}` after the words "JSON schema"
 * that parses to an object schema.
 */
export function schemaInSystemPrompt(
  messages: readonly { role: string }[],
  seen: readonly { text: string }[],
): Record<string, unknown> | undefined {
  for (let i = 0; i < messages.length; i++) {
    const role = messages[i]!.role;
    if (role !== "system" && role !== "developer") continue;
    const text = seen[i]!.text;
    const at = text.search(/json schema/i);
    if (at === -1) continue;
    const start = text.indexOf("{", at);
    if (start === -1) continue;
    let depth = 0;
    let inString = false;
    for (let j = start; j < text.length; j++) {
      const c = text[j];
      if (inString) {
        if (c === "\\") j++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === "{") depth++;
      else if (c === "}" && --depth === 0) {
        try {
          const parsed: unknown = JSON.parse(text.slice(start, j + 1));
          if (
            parsed &&
            typeof parsed === "object" &&
            !Array.isArray(parsed) &&
            ("properties" in parsed || (parsed as { type?: unknown }).type === "object")
          ) {
            return parsed as Record<string, unknown>;
          }
        } catch {
          // not JSON: not a schema
        }
        break;
      }
    }
  }
  return undefined;
}
