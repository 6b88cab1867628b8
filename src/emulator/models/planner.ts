/**
 * The deterministic tool planner: which tools the emulated model calls, with which arguments.
 *
 * For the last user request text:
 * 1. `tool_choice: {type: "function", function: {name}}` forces that tool (arguments filled from the prompt,
 *    every property given a value);
 * 2. a tool is called when its name is in the text ("magic_function", or "magic function"), or when most of
 *    its significant name words are ("which networks..." -> `crypto_networks`) and its required parameters
 *    can be filled, or when all its (>= 1) required parameters are filled from specific evidence: an EVM
 *    address, a tx hash, a network slug, a mentioned enum value, a "name: value" pair;
 * 3. else the first tool whose (>= 1) required parameters can all be filled from the text (numbers, quoted
 *    text, capitalized words);
 * 4. `tool_choice: "required"` falls back to the first tool with filled-in arguments.
 * A tool filled from several values of one kind (two addresses, two slugs) is called once per value.
 * Calls already made since the last user message (same name, same arguments) are never repeated, so an agent
 * loop always ends; `parallel_tool_calls: false` keeps only the first call of a turn.
 */
import { extractFacts, identifierWords, stem, textWords, type PromptFacts } from "./facts.js";
import { fillSchema, requiredProperties, type FillResult, type JsonSchema } from "./structured.js";

export interface ToolSpec {
  name: string;
  description?: string;
  parameters?: JsonSchema;
}

export type ToolChoice = "auto" | "none" | "required" | { name: string };

export interface PlannedCall {
  name: string;
  arguments: unknown;
}

export interface PlannerInput {
  tools: ToolSpec[];
  toolChoice: ToolChoice;
  parallel: boolean;
  /** the last user message's text */
  userText: string;
  /** calls already made since the last user message */
  alreadyCalled: PlannedCall[];
}

const GENERIC_NAME_WORDS = new Set(
  "get set fetch list do run call tool tools query the by of for to make create lookup look up check read api info data func fn".split(" "),
);

/** JSON with sorted keys: two argument objects are "the same call" regardless of key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export function callSignature(call: PlannedCall): string {
  let args = call.arguments;
  if (typeof args === "string") {
    try {
      args = JSON.parse(args);
    } catch {
      // keep the raw string: a call with unparsable arguments is still "a call"
    }
  }
  return `${call.name}\u0000${canonicalJson(args ?? {})}`;
}

interface Mention {
  position: number;
  exact: boolean;
}

/** Where (and how) the tool's name is mentioned in the text. */
export function findMention(toolName: string, text: string): Mention | undefined {
  const lower = text.toLowerCase();
  const words = identifierWords(toolName);
  for (const spelling of [toolName.toLowerCase(), words.join(" "), words.join("_"), words.join("-")]) {
    const at = spelling.length >= 2 ? lower.indexOf(spelling) : -1;
    if (at >= 0) return { position: at, exact: true };
  }
  const significant = words.filter((w) => w.length >= 3 && !GENERIC_NAME_WORDS.has(w)).map(stem);
  if (significant.length === 0) return undefined;
  const present = textWords(text);
  const matched = significant.filter((w) => present.has(w));
  if (matched.length === 0 || matched.length * 2 < significant.length) return undefined;
  const positions = matched.map((w) => lower.search(new RegExp(`\\b${w}`)));
  return { position: Math.min(...positions.filter((p) => p >= 0), lower.length), exact: false };
}

const EXPANDABLE = ["addresses", "txHashes", "slugs"] as const;

/** One fill per value when the fill used a multi-valued fact (two addresses -> two calls). */
function expandFill(tool: ToolSpec, facts: PromptFacts, fill: FillResult, question: string, fallback: boolean): unknown[] {
  const kind = EXPANDABLE.find((k) => fill.used.has(k) && facts[k].length > 1);
  if (!kind) return [fill.value];
  return facts[kind].map((value) => {
    const narrowed: PromptFacts = { ...facts, [kind]: [value] };
    return fillSchema(tool.parameters ?? {}, narrowed, { fallback, question })?.value ?? fill.value;
  });
}

export function planToolCalls(input: PlannerInput): PlannedCall[] {
  const { tools, toolChoice, userText } = input;
  if (toolChoice === "none" || tools.length === 0) return [];
  const facts = extractFacts(userText);
  const question = userText.trim();

  if (typeof toolChoice === "object") {
    const tool = tools.find((t) => t.name === toolChoice.name) ?? { name: toolChoice.name };
    const fill = fillSchema(tool.parameters ?? { type: "object", properties: {} }, facts, { fallback: true, question });
    return [{ name: tool.name, arguments: fill?.value ?? {} }];
  }

  const ranked: { position: number; order: number; calls: PlannedCall[] }[] = [];
  tools.forEach((tool, order) => {
    const schema = tool.parameters ?? { type: "object", properties: {} };
    const requiredCount = requiredProperties(schema).length;
    const mention = findMention(tool.name, userText);
    const fill = fillSchema(schema, facts, { fallback: false, question });
    let chosen: { fill: FillResult; fallback: boolean } | undefined;
    if (mention?.exact) {
      chosen = fill
        ? { fill, fallback: false }
        : { fill: fillSchema(schema, facts, { fallback: true, question }) ?? { value: {}, strong: false, used: new Set() }, fallback: true };
    } else if (mention && fill) {
      chosen = { fill, fallback: false };
    } else if (fill && fill.strong && requiredCount > 0) {
      chosen = { fill, fallback: false };
    }
    if (!chosen) return;
    const values = expandFill(tool, facts, chosen.fill, question, chosen.fallback);
    ranked.push({
      position: mention?.position ?? userText.length + order,
      order,
      calls: values.map((v) => ({ name: tool.name, arguments: v })),
    });
  });

  if (ranked.length === 0) {
    for (const tool of tools) {
      const schema = tool.parameters ?? {};
      if (requiredProperties(schema).length === 0) continue;
      const fill = fillSchema(schema, facts, { fallback: false, question });
      if (fill) {
        ranked.push({ position: 0, order: 0, calls: [{ name: tool.name, arguments: fill.value }] });
        break;
      }
    }
  }

  let calls = ranked.sort((a, b) => a.position - b.position || a.order - b.order).flatMap((r) => r.calls);

  if (calls.length === 0 && toolChoice === "required" && tools[0]) {
    const tool = tools[0];
    const fill = fillSchema(tool.parameters ?? { type: "object", properties: {} }, facts, { fallback: true, question });
    calls = [{ name: tool.name, arguments: fill?.value ?? {} }];
  }

  const seen = new Set(input.alreadyCalled.map(callSignature));
  const fresh: PlannedCall[] = [];
  for (const call of calls) {
    const sig = callSignature(call);
    if (seen.has(sig)) continue;
    seen.add(sig);
    fresh.push(call);
  }
  return input.parallel ? fresh : fresh.slice(0, 1);
}
