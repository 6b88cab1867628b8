/**
 * What a model reads: compact JSON, hex quantities also in decimal, big integers as strings, output capped
 * with a hint to narrow the query. The untouched response travels as the tool message's artifact.
 */

/** EVM fields whose hex values are quantities (not hashes or addresses). */
const QUANTITY_KEYS = new Set([
  "blockNumber",
  "number",
  "timestamp",
  "gas",
  "gasUsed",
  "gasLimit",
  "gasPrice",
  "cumulativeGasUsed",
  "effectiveGasPrice",
  "maxFeePerGas",
  "maxPriorityFeePerGas",
  "maxFeePerBlobGas",
  "baseFeePerGas",
  "blobGasUsed",
  "blobGasPrice",
  "excessBlobGas",
  "value",
  "nonce",
  "transactionIndex",
  "logIndex",
  "chainId",
  "size",
  "difficulty",
  "totalDifficulty",
  "l1Fee",
  "l1GasUsed",
  "l1GasPrice",
  "l1BlockNumber",
  "oldestBlock",
  "startingBlock",
  "currentBlock",
  "highestBlock",
]);
/** Methods whose whole result is one hex quantity. */
export const QUANTITY_METHODS = new Set([
  "eth_blockNumber",
  "eth_getBalance",
  "eth_chainId",
  "eth_gasPrice",
  "eth_getTransactionCount",
  "eth_estimateGas",
  "eth_maxPriorityFeePerGas",
  "eth_blobBaseFee",
  "eth_getBlockTransactionCountByNumber",
  "eth_getBlockTransactionCountByHash",
  "eth_getUncleCountByBlockNumber",
  "eth_getUncleCountByBlockHash",
  "net_peerCount",
  "eth_protocolVersion",
]);

const HEX_QUANTITY = /^0x(0|[1-9a-fA-F][0-9a-fA-F]{0,63})$/;

export function isHexQuantity(value: unknown): value is string {
  return typeof value === "string" && HEX_QUANTITY.test(value);
}

export function hexToDecimal(value: string): string {
  return BigInt(value).toString(10);
}

/**
 * Adds `<key>Decimal` beside every hex quantity field (values above 9, where hex and decimal differ),
 * recursively. Hex stays as is: the model may pass it back as a parameter.
 */
export function withDecimals(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withDecimals);
  if (!value || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] = withDecimals(v);
    if (QUANTITY_KEYS.has(k) && isHexQuantity(v) && BigInt(v) > 9n) out[`${k}Decimal`] = hexToDecimal(v);
  }
  return out;
}

/** JSON with bigint as decimal strings (JSON.stringify throws on bigint). */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
}

/** Converts bigints (and ethers `Result`s) into plain JSON values. */
export function plain(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return Array.from(value, plain);
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = plain(v);
    return out;
  }
  return value;
}

export const DEFAULT_MAX_OUTPUT_CHARS = 6000;

export interface CappedOutput {
  text: string;
  truncated: boolean;
}

/**
 * Serializes `value` within `maxChars`. When too long, the largest arrays are cut (keeping their first
 * items and a count of what was left out) until it fits; a last resort cuts the text. A hint says how to
 * narrow the query.
 */
export function capOutput(value: unknown, maxChars: number = DEFAULT_MAX_OUTPUT_CHARS, hint?: string): CappedOutput {
  const full = toJson(value);
  if (full.length <= maxChars) return { text: full, truncated: false };
  const note = hint ?? "output was cut; narrow the query (a smaller block range, fewer items, a more specific method)";
  const holder = { value: JSON.parse(full) as unknown };
  for (let round = 0; round < 40; round++) {
    const largest = findLargestArray(holder);
    if (!largest || largest.items < 1) break;
    const keep = Math.floor(largest.items / 2);
    largest.cut(keep);
    const v = holder.value;
    const text = toJson({ truncated: true, hint: note, ...(isRecord(v) ? v : { result: v }) });
    if (text.length <= maxChars) return { text, truncated: true };
  }
  // last resort: a prefix of the text (escaping makes it longer once quoted, so shrink until it fits)
  let room = Math.max(0, maxChars - toJson({ truncated: true, hint: note, partial: "" }).length);
  let text = toJson({ truncated: true, hint: note, partial: full.slice(0, room) });
  while (text.length > maxChars && room > 0) {
    room = Math.max(0, room - (text.length - maxChars));
    text = toJson({ truncated: true, hint: note, partial: full.slice(0, room) });
  }
  return { text, truncated: true };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}

const OMITTED = /^… (\d+) more item\(s\) omitted$/;

interface ArraySlot {
  /** items still shown (without the "omitted" marker) */
  items: number;
  size: number;
  /** keeps the first `keep` items and updates the marker */
  cut(keep: number): void;
}

/** The array (anywhere in the tree) whose JSON is longest; arrays are cut in place. */
function findLargestArray(holder: { value: unknown }): ArraySlot | undefined {
  let best: ArraySlot | undefined;
  const visit = (value: unknown) => {
    if (Array.isArray(value)) {
      const marker = value.at(-1);
      const match = typeof marker === "string" ? OMITTED.exec(marker) : null;
      const omitted = match ? Number(match[1]) : 0;
      const items = match ? value.length - 1 : value.length;
      const size = toJson(value).length;
      if (!best || size > best.size) {
        best = {
          items,
          size,
          cut: (keep) => value.splice(keep, value.length - keep, `… ${omitted + items - keep} more item(s) omitted`),
        };
      }
      for (let i = 0; i < items; i++) visit(value[i]);
    } else if (isRecord(value)) {
      for (const k of Object.keys(value)) visit(value[k]);
    }
  };
  visit(holder.value);
  return best;
}
