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
 * 4. `tool_choice: "required"` falls back to the first tool, in order, whose filled-in call was not made yet.
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

const STOPWORDS = new Set(
  (
    "what is the of on and did does do a an in for to how much many which who when where why with me my please tell show " +
    "give get check use using this that there it be are was were has have at by from as or if can could would should " +
    "any some all you your i we our its their than then also about into per one two"
  ).split(" "),
);

/** Loose root of a word, for matching a question to tool descriptions ("succeeded" ~ "succeed"). */
function root(word: string): string {
  for (const suffix of ["ing", "ed", "es", "s"]) {
    if (word.length > suffix.length + 3 && word.endsWith(suffix)) return word.slice(0, -suffix.length);
  }
  return word;
}

/** The specific facts (addresses, hashes, slugs) a tool's arguments use. */
function evidenceIn(values: unknown[], facts: PromptFacts): Set<string> {
  const specific = new Set([...facts.addresses, ...facts.txHashes, ...facts.slugs]);
  const out = new Set<string>();
  const visit = (v: unknown): void => {
    if (typeof v === "string") {
      if (specific.has(v)) out.add(v);
    } else if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === "object") Object.values(v).forEach(visit);
  };
  values.forEach(visit);
  return out;
}

function relevantWords(text: string): Set<string> {
  const out = new Set<string>();
  for (const w of text.toLowerCase().match(/[a-z][a-z0-9]*/g) ?? []) if (w.length > 2 && !STOPWORDS.has(w)) out.add(root(w));
  return out;
}

/**
 * Tools named in the question are always called. Of the others (called because their parameters can be
 * filled), keep a greedy cover of the question's intent: the tool whose name and description share the
 * most words with the question, then the next that adds words not covered yet, and so on. "USDC balance of
 * X, and did transaction Y succeed?" -> erc20_balance + transaction_status, not every tool that takes an
 * address. With no word in common, the first fillable tool stays (the old behaviour).
 */
function selectByIntent(
  ranked: { order: number; mentioned: boolean; words: Set<string>; nameHits: number; evidence: Set<string> }[],
): void {
  const others = ranked.filter((r) => !r.mentioned);
  if (others.length === 0) return;
  const covered = new Set(ranked.filter((r) => r.mentioned).flatMap((r) => [...r.words]));
  const keep = new Set<object>();
  const pool = [...others];
  for (;;) {
    let best: (typeof pool)[number] | undefined;
    let bestGain = 0;
    for (const r of pool) {
      const gain = [...r.words].filter((w) => !covered.has(w)).length;
      // ties go to the tool whose own name carries the question's words (native_balance over crypto_rpc)
      const better =
        gain > bestGain ||
        (gain === bestGain && gain > 0 && best && (r.nameHits > best.nameHits || (r.nameHits === best.nameHits && r.order < best.order)));
      if (better) (best = r), (bestGain = gain);
    }
    if (!best) break;
    keep.add(best);
    for (const w of best.words) covered.add(w);
    pool.splice(pool.indexOf(best), 1);
  }
  // A tool that answers for a fact no kept tool looks at (an address, a hash, a network) stays too.
  const seen = new Set(ranked.filter((r) => r.mentioned || keep.has(r)).flatMap((r) => [...r.evidence]));
  for (const r of [...pool].sort((a, b) => a.order - b.order)) {
    if ([...r.evidence].some((v) => !seen.has(v))) {
      keep.add(r);
      for (const v of r.evidence) seen.add(v);
    }
  }
  if (keep.size === 0 && covered.size === 0) keep.add(others.sort((a, b) => a.order - b.order)[0]!);
  for (let i = ranked.length - 1; i >= 0; i--) if (!ranked[i]!.mentioned && !keep.has(ranked[i]!)) ranked.splice(i, 1);
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

  const ranked: {
    position: number;
    order: number;
    calls: PlannedCall[];
    mentioned: boolean;
    words: Set<string>;
    nameHits: number;
    evidence: Set<string>;
  }[] = [];
  // the question's words, without slugs and hex values ("base-mainnet" is not about "raw base units")
  const asked = relevantWords(userText.replace(/\b0x[0-9a-fA-F]+\b/g, " ").replace(/\b[a-z0-9]+(?:-[a-z0-9]+)+\b/g, " "));
  tools.forEach((tool, order) => {
    const schema = tool.parameters ?? { type: "object", properties: {} };
    const requiredCount = requiredProperties(schema).length;
    const mention = findMention(tool.name, userText);
    const fill = fillSchema(schema, facts, { fallback: false, question });
    let chosen: { fill: FillResult; fallback: boolean } | undefined;
    if (mention?.exact) {
      chosen = fill
        ? { fill, fallback: false }
        : {
            fill: fillSchema(schema, facts, { fallback: true, question }) ?? { value: {}, strong: false, used: new Set() },
            fallback: true,
          };
    } else if (mention && fill) {
      chosen = { fill, fallback: false };
    } else if (fill?.strong && requiredCount > 0) {
      chosen = { fill, fallback: false };
    }
    if (!chosen) return;
    const values = expandFill(tool, facts, chosen.fill, question, chosen.fallback);
    const offered = relevantWords(`${identifierWords(tool.name).join(" ")} ${tool.description ?? ""}`);
    ranked.push({
      position: mention?.position ?? userText.length + order,
      order,
      calls: values.map((v) => ({ name: tool.name, arguments: v })),
      mentioned: mention?.exact === true, // a partial mention ("balance" of native_balance) competes on intent
      words: new Set([...asked].filter((w) => offered.has(w))),
      nameHits: identifierWords(tool.name).filter((w) => asked.has(root(w))).length,
      evidence: evidenceIn(values, facts),
    });
  });
  selectByIntent(ranked);

  if (ranked.length === 0) {
    for (const tool of tools) {
      const schema = tool.parameters ?? {};
      if (requiredProperties(schema).length === 0) continue;
      const fill = fillSchema(schema, facts, { fallback: false, question });
      if (fill) {
        ranked.push({
          position: 0,
          order: 0,
          calls: [{ name: tool.name, arguments: fill.value }],
          mentioned: false,
          words: new Set(),
          nameHits: 0,
          evidence: new Set(),
        });
        break;
      }
    }
  }

  const calls = ranked.sort((a, b) => a.position - b.position || a.order - b.order).flatMap((r) => r.calls);

  const seen = new Set(input.alreadyCalled.map(callSignature));
  const fresh: PlannedCall[] = [];
  for (const call of calls) {
    const sig = callSignature(call);
    if (seen.has(sig)) continue;
    seen.add(sig);
    fresh.push(call);
  }
  // `required`: some call, the first tool in order not yet called with these arguments (none left: the loop ends)
  if (fresh.length === 0 && toolChoice === "required") {
    for (const tool of tools) {
      const fill = fillSchema(tool.parameters ?? { type: "object", properties: {} }, facts, { fallback: true, question });
      const call = { name: tool.name, arguments: fill?.value ?? {} };
      if (seen.has(callSignature(call))) continue;
      fresh.push(call);
      break;
    }
  }
  return input.parallel ? fresh : fresh.slice(0, 1);
}
