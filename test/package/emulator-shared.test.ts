/**
 * The emulator imports the service's wire tables from the client's entry (`langchain-service`) instead of keeping
 * copies: a copy drifts (the client checks one list while the emulator answers by another) and a fix reaches only
 * one of them. A source file of the emulator that spells out a run of a shared table's values holds a copy of it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { authorizationTypes } from "@x402/evm";
import * as client from "../../src/index.js";

/**
 * Names the client's entry exports for the emulator to share (test/package/exports.test.ts lists them too), in
 * groups whose string values are checked together: a lone common word ("web_search" is also a built-in tool's
 * type) says nothing, the group does. Numbers (chain id, size limits) are not looked for: too common to tell.
 */
const SHARED: (keyof typeof client)[][] = [
  ["AUDIO_MIME_TYPES"],
  ["VIDEO_DURATIONS"],
  ["VIDEO_ASPECT_RATIOS"],
  ["IMAGE_EDIT_ASPECT_RATIOS"],
  ["SIWX_HEADER", "SIWX_LEGACY_HEADER"],
  ["PAYMENT_HEADERS"],
  ["BASE_MAINNET"],
  ["SEARCH_DOCUMENTS_CALL_ID", "SEARCH_DOCUMENTS_CALL_NAME"],
];

/** The strings of a constant, in order: itself, or those in its arrays and records (numbers say too little). */
function valuesOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  const items = Array.isArray(value) ? value : value && typeof value === "object" ? Object.values(value) : [];
  return items.flatMap(valuesOf);
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const quoted = (value: string) => `["'\`]${escapeRegExp(value)}["'\`]`;
// between two entries of a copied table: a comma (closing and opening brackets around it), and a record's key
const NEXT = String.raw`\s*[}\]]*\s*,\s*[{[]*\s*(?:["']?[\w-]+["']?\s*:\s*)?`;
// comments may name a header or a value; only code is searched
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1");

/**
 * Whether `text` holds a copy of `values`: a table (three values or more) when five of its entries (or all, if
 * fewer) stand in a row in its order (a model's shorter list of durations or ratios is its own data); single
 * constants when every one of them is quoted.
 */
function holdsCopy(text: string, values: string[]): boolean {
  if (values.length < 3) return values.every((v) => new RegExp(quoted(v), "i").test(text));
  const run = Math.min(values.length, 5);
  for (let at = 0; at + run <= values.length; at++) {
    if (
      new RegExp(
        values
          .slice(at, at + run)
          .map(quoted)
          .join(NEXT),
        "i",
      ).test(text)
    )
      return true;
  }
  return false;
}

const root = new URL("../../packages/langchain-service-emulator/src/", import.meta.url);
const files = readdirSync(root, { recursive: true, encoding: "utf8" })
  .filter((path) => path.endsWith(".ts"))
  .map((path) => ({ path, text: code(readFileSync(new URL(path, root), "utf8")) }));

describe("the emulator shares the client's wire tables, it keeps no copy", () => {
  it("finds the emulator's sources", () => {
    expect(files.length).toBeGreaterThan(20);
  });

  for (const names of SHARED) {
    it(`${names.join(" + ")}: no emulator source quotes its values`, () => {
      // biome-ignore lint/performance/noDynamicNamespaceImportAccess: a test reads the entry's exports by name on purpose
      const values = names.flatMap((name) => valuesOf(client[name]));
      expect(values.length).toBeGreaterThan(0);
      const copies = files.filter((f) => holdsCopy(f.text, values)).map((f) => f.path);
      expect(copies).toEqual([]);
    });
  }

  it("@x402/evm's EIP-3009 typed-data types: no emulator source spells them out (its facilitator has them)", () => {
    const values = valuesOf(authorizationTypes);
    expect(values).toContain("validBefore");
    expect(files.filter((f) => holdsCopy(f.text, values)).map((f) => f.path)).toEqual([]);
  });
});
