/**
 * Shape checks of chat answers (spec 2.3), on the JSON path and for every stream event: a member of the wrong
 * type is a ResponseFormatError naming it (`choices[0].message.content: expected ...`), never a TypeError deep
 * in the conversion or a string in a token count. Only the members this package reads are checked, and unknown
 * members pass, as the spec lets them. Hand-written rather than zod: it runs on every stream event.
 */
import { ResponseFormatError } from "../http/errors.js";
import type { ServiceResponseHeaders } from "../http/headers.js";

type Obj = Record<string, unknown>;

/** A shape problem; turned into a ResponseFormatError with the body and headers at the top. */
class Problem extends Error {}

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function kind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)}`;
  if (typeof v === "number" || typeof v === "boolean") return `${typeof v} ${String(v)}`;
  return `a ${typeof v}`;
}

function fail(path: string, expected: string, got: unknown): never {
  throw new Problem(`${path}: expected ${expected}, got ${kind(got)}`);
}

function optString(v: unknown, path: string): void {
  if (v !== undefined && v !== null && typeof v !== "string") fail(path, "a string", v);
}

/** token counts and indices: integers >= 0 */
function optCount(v: unknown, path: string): void {
  if (v !== undefined && v !== null && !(typeof v === "number" && Number.isInteger(v) && v >= 0)) {
    fail(path, "a non-negative integer", v);
  }
}

function optObject(v: unknown, path: string): v is Obj | undefined | null {
  if (v !== undefined && v !== null && !isObj(v)) fail(path, "an object", v);
  return true;
}

function optArray(v: unknown, path: string): v is unknown[] | undefined | null {
  if (v !== undefined && v !== null && !Array.isArray(v)) fail(path, "an array", v);
  return true;
}

function checkUsage(usage: unknown, path: string): void {
  if (!optObject(usage, path) || !usage) return;
  optCount(usage.prompt_tokens, `${path}.prompt_tokens`);
  optCount(usage.completion_tokens, `${path}.completion_tokens`);
  optCount(usage.total_tokens, `${path}.total_tokens`);
  const prompt = usage.prompt_tokens_details;
  if (optObject(prompt, `${path}.prompt_tokens_details`) && prompt) {
    optCount(prompt.cached_tokens, `${path}.prompt_tokens_details.cached_tokens`);
    optCount(prompt.cache_creation_input_tokens, `${path}.prompt_tokens_details.cache_creation_input_tokens`);
  }
  const completion = usage.completion_tokens_details;
  if (optObject(completion, `${path}.completion_tokens_details`) && completion) {
    optCount(completion.reasoning_tokens, `${path}.completion_tokens_details.reasoning_tokens`);
  }
}

function checkCost(cost: unknown): void {
  if (!optObject(cost, "cost") || !cost) return;
  for (const key of ["usd", "diem"]) {
    const v = cost[key];
    if (v !== undefined && !(typeof v === "number" && Number.isFinite(v) && v >= 0)) fail(`cost.${key}`, "a number >= 0", v);
  }
}

/** string, null, or an array of content parts (`{type: "text", text}`, others kept as they are). */
function checkContent(content: unknown, path: string): void {
  if (content === undefined || content === null || typeof content === "string") return;
  if (!Array.isArray(content)) fail(path, "a string, an array of text parts or null", content);
  content.forEach((part, i) => {
    if (!isObj(part) || typeof part.type !== "string") fail(`${path}[${i}]`, "a content part with a string type", part);
    if (part.type === "text" && typeof part.text !== "string") fail(`${path}[${i}].text`, "a string", part.text);
  });
}

function checkMessage(message: unknown, path: string): void {
  if (!optObject(message, path) || !message) return;
  checkContent(message.content, `${path}.content`);
  optString(message.role, `${path}.role`);
  optString(message.reasoning_content, `${path}.reasoning_content`);
  const details = message.reasoning_details;
  if (optArray(details, `${path}.reasoning_details`) && details) {
    details.forEach((d, i) => {
      if (!isObj(d)) fail(`${path}.reasoning_details[${i}]`, "an object", d);
    });
  }
  const calls = message.tool_calls;
  if (optArray(calls, `${path}.tool_calls`) && calls) {
    calls.forEach((call, i) => {
      const at = `${path}.tool_calls[${i}]`;
      if (!isObj(call)) fail(at, "an object", call);
      optString(call.id, `${at}.id`);
      optCount(call.index, `${at}.index`);
      const fn = call.function;
      if (optObject(fn, `${at}.function`) && fn) {
        optString(fn.name, `${at}.function.name`);
        optString(fn.arguments, `${at}.function.arguments`);
      }
    });
  }
}

/**
 * `logprobs`: null, or `{content, refusal}`, each null or a list of `{token, logprob, bytes?, top_logprobs?}`. In a
 * stream it is on every chunk's metadata, which `concat` merges: a member of another type on a later chunk (`[]`,
 * then `0`) would throw a plain Error from LangChain's merge instead of a typed one.
 */
function checkLogprobs(logprobs: unknown, path: string): void {
  if (!optObject(logprobs, path) || !logprobs) return;
  for (const key of ["content", "refusal"]) {
    const list = logprobs[key];
    if (!optArray(list, `${path}.${key}`) || !list) continue;
    list.forEach((item, i) => {
      const at = `${path}.${key}[${i}]`;
      if (!isObj(item)) fail(at, "an object", item);
      if (typeof item.token !== "string") fail(`${at}.token`, "a string", item.token);
      if (typeof item.logprob !== "number") fail(`${at}.logprob`, "a number", item.logprob);
      optArray(item.bytes, `${at}.bytes`);
      optArray(item.top_logprobs, `${at}.top_logprobs`);
    });
  }
}

function checkTop(data: Obj, paramsKey: string, stream: boolean): void {
  optString(data.id, "id");
  optString(data.model, "model");
  optString(data.system_fingerprint, "system_fingerprint");
  checkUsage(data.usage, "usage");
  checkCost(data.cost);
  const echo = data[paramsKey];
  if (optObject(echo, paramsKey) && echo) optArray(echo.web_search_citations, `${paramsKey}.web_search_citations`);
  const choices = data.choices;
  if (!optArray(choices, "choices") || !choices) return;
  const member = stream ? "delta" : "message";
  choices.forEach((choice, i) => {
    const at = `choices[${i}]`;
    if (!isObj(choice)) fail(at, "an object", choice);
    optCount(choice.index, `${at}.index`);
    optString(choice.finish_reason, `${at}.finish_reason`);
    optString(choice.stop_reason, `${at}.stop_reason`);
    checkLogprobs(choice.logprobs, `${at}.logprobs`);
    checkMessage(choice[member], `${at}.${member}`);
  });
}

function run(data: unknown, paramsKey: string, stream: boolean, headers: ServiceResponseHeaders | undefined): void {
  try {
    if (!isObj(data)) fail(stream ? "stream event" : "response body", "a JSON object", data);
    checkTop(data, paramsKey, stream);
  } catch (err) {
    if (!(err instanceof Problem)) throw err;
    const where = stream ? "malformed stream event" : "malformed response";
    throw new ResponseFormatError(`${where}: ${err.message}`, { status: 200, body: data, headers });
  }
}

/** Checks a parsed chat completion (JSON path). `paramsKey`: the brand's `<brand>_parameters` member. */
export function checkCompletion(data: unknown, paramsKey: string, headers?: ServiceResponseHeaders): void {
  run(data, paramsKey, false, headers);
}

/**
 * Checks one stream event. A delta's content given as an array of text parts (the spec's other content form)
 * is joined into its string here, so the stream reads it instead of dropping it.
 */
export function checkChunk(data: unknown, paramsKey: string, headers?: ServiceResponseHeaders): void {
  run(data, paramsKey, true, headers);
  const choices = (data as Obj).choices;
  if (!Array.isArray(choices)) return;
  for (const choice of choices as Obj[]) {
    const delta = choice.delta as Obj | undefined | null;
    if (delta && Array.isArray(delta.content)) {
      delta.content = (delta.content as Obj[]).map((p) => (p.type === "text" ? (p.text as string) : "")).join("");
    }
  }
}
