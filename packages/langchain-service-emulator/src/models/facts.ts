/**
 * Facts the deterministic planner and the structured-output filler read from a prompt: EVM addresses,
 * transaction hashes, network slugs, JSON-RPC method names, numbers, quoted strings, capitalized words.
 * Plain regular expressions: the emulator stands in for a language model, it does not parse language.
 */

export interface PromptFacts {
  text: string;
  lower: string;
  addresses: string[];
  txHashes: string[];
  slugs: string[];
  rpcMethods: string[];
  numbers: number[];
  quoted: string[];
  capitalized: string[];
  /** runs of capitalized words ("San Francisco"), after "in/at/near/from/for/about" first, then the others */
  places: string[];
}

const SLUG_RE = /\b[a-z]+-(?:mainnet|testnet|sepolia|devnet|holesky|amoy|fuji)\b/g;
const RPC_METHOD_RE =
  /\b(?:eth|net|web3|debug|trace|txpool|starknet|zks)_[A-Za-z0-9_]+\b|\bget(?:Balance|Slot|BlockHeight|LatestBlockhash|Transaction|AccountInfo|Version|Health|EpochInfo)\b/g;
const COMMON_CAPITALIZED = new Set(
  "I What Who Whom Whose Where When Why How Which Is Are Was Were Do Does Did Can Could Would Should Will Please Tell Give Show Find Get Hello Hi Hey Thanks Thank The A An And Or But If Then Use Call Check Look Say Make Let Also Now Echo JSON Yes No OK Ok".split(
    " ",
  ),
);

function unique<T>(values: T[]): T[] {
  return [...new Set(values)];
}

export function extractFacts(text: string): PromptFacts {
  const txHashes = unique(text.match(/\b0x[0-9a-fA-F]{64}\b/g) ?? []);
  // EVM addresses, then Solana ones (base58, 32–44 characters, with a digit: not a long word)
  const solanaAddresses = (text.match(/\b[1-9A-HJ-NP-Za-km-z]{32,44}\b/g) ?? []).filter((a) => /\d/.test(a) && /[A-Za-z]/.test(a));
  const addresses = unique([...(text.match(/\b0x[0-9a-fA-F]{40}\b/g) ?? []), ...solanaAddresses]);
  const slugs = unique(text.match(SLUG_RE) ?? []);
  const rpcMethods = unique(text.match(RPC_METHOD_RE) ?? []);
  const quoted: string[] = [];
  for (const m of text.matchAll(/"([^"\n]+)"|“([^”\n]+)”|(?<![A-Za-z])'([^'\n]+)'(?![A-Za-z])/g)) {
    const q = m[1] ?? m[2] ?? m[3];
    if (q) quoted.push(q.trim());
  }
  // numbers: not the digits inside hex strings, slugs or words like "eth_call2"
  const scrubbed = text.replace(/\b0x[0-9a-fA-F]+\b/g, " ").replace(/\b[\w-]*[A-Za-z_][\w-]*\b/g, " ");
  const numbers = (scrubbed.match(/-?\d+(?:\.\d+)?/g) ?? []).map(Number).filter((n) => Number.isFinite(n));
  const capitalized = (text.match(/\b[A-Z][a-zA-Z]+\b/g) ?? []).filter((w) => !COMMON_CAPITALIZED.has(w));
  // a place is several words ("San Francisco", "New York"); one named after a preposition is the likeliest
  const afterPreposition: string[] = [];
  const runs: string[] = [];
  for (const m of text.matchAll(/(?:\b(in|at|near|from|for|about)[ \t]+)?\b([A-Z][a-zA-Z]+(?:[ \t]+[A-Z][a-zA-Z]+)*)\b/g)) {
    const words = m[2]!.split(/[ \t]+/);
    while (words.length && COMMON_CAPITALIZED.has(words[0]!)) words.shift();
    if (words.length) (m[1] ? afterPreposition : runs).push(words.join(" "));
  }
  const places = [...afterPreposition.reverse(), ...runs.reverse()];
  return { text, lower: text.toLowerCase(), addresses, txHashes, slugs, rpcMethods, numbers, quoted, capitalized, places };
}

/** Words of an identifier: `getWeather_now` -> ["get", "weather", "now"]. */
export function identifierWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** Singular-ish form for loose word comparison. */
export function stem(word: string): string {
  return word.length > 3 && word.endsWith("s") ? word.slice(0, -1) : word;
}

export function textWords(text: string): Set<string> {
  return new Set((text.toLowerCase().match(/[a-z0-9]+/g) ?? []).map(stem));
}

/**
 * Infers a JSON-RPC call from the prompt: an explicit method name wins, else keywords ("balance",
 * "block number", "gas price", a tx hash...). Params are filled from the facts.
 */
export function inferRpcCall(facts: PromptFacts, slug?: string): { method: string; params: unknown[] } {
  const solana = (slug ?? facts.slugs[0] ?? "").startsWith("solana");
  const address = facts.addresses[0];
  const hash = facts.txHashes[0];
  const l = facts.lower;
  const explicit = facts.rpcMethods[0];
  const method =
    explicit ??
    (solana
      ? /balance/.test(l)
        ? "getBalance"
        : /block ?height/.test(l)
          ? "getBlockHeight"
          : /blockhash/.test(l)
            ? "getLatestBlockhash"
            : "getSlot"
      : /receipt/.test(l) && hash
        ? "eth_getTransactionReceipt"
        : hash
          ? "eth_getTransactionByHash"
          : /balance/.test(l)
            ? "eth_getBalance"
            : /nonce|transaction count/.test(l)
              ? "eth_getTransactionCount"
              : /\bcode\b|bytecode/.test(l) && address
                ? "eth_getCode"
                : /chain ?id/.test(l)
                  ? "eth_chainId"
                  : /gas ?price/.test(l)
                    ? "eth_gasPrice"
                    : address
                      ? "eth_getBalance"
                      : "eth_blockNumber");
  return { method, params: rpcParams(method, facts) };
}

function rpcParams(method: string, facts: PromptFacts): unknown[] {
  const address = facts.addresses[0];
  const hash = facts.txHashes[0];
  switch (method) {
    case "eth_getBalance":
    case "eth_getCode":
    case "eth_getTransactionCount":
      return address ? [address, "latest"] : [];
    case "eth_getTransactionByHash":
    case "eth_getTransactionReceipt":
      return hash ? [hash] : [];
    case "eth_getBlockByNumber": {
      const n = facts.numbers.find((x) => Number.isInteger(x) && x >= 0);
      return [n === undefined ? "latest" : `0x${n.toString(16)}`, false];
    }
    case "getBalance":
    case "getAccountInfo":
      return facts.text.match(/\b[1-9A-HJ-NP-Za-km-z]{32,44}\b/g)?.slice(0, 1) ?? [];
    default:
      return [];
  }
}
