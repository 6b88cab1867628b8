/**
 * The emulator imports the service's wire tables from the client's entry (`langchain-service`) instead of keeping
 * copies: a copy drifts (the client checks one list while the emulator answers by another) and a fix reaches only
 * one of them. A source file of the emulator that quotes most of a shared table's values holds a copy of it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import * as client from "../../src/index.js";

/** Names the client's entry exports for the emulator to share (test/package/exports.test.ts lists them too). */
const SHARED = ["AUDIO_MIME_TYPES"] as const;

const root = new URL("../../packages/langchain-service-emulator/src/", import.meta.url);
const files = readdirSync(root, { recursive: true, encoding: "utf8" })
  .filter((path) => path.endsWith(".ts"))
  .map((path) => ({ path, text: readFileSync(new URL(path, root), "utf8") }));

/** The strings of a constant: itself, an array's elements or a record's values (numbers say too little). */
function valuesOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  const items = Array.isArray(value) ? value : value && typeof value === "object" ? Object.values(value) : [];
  return items.filter((item): item is string => typeof item === "string");
}

const quotes = (text: string, value: string) =>
  new RegExp(`["'\`]${value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}["'\`]`, "i").test(text);

describe("the emulator shares the client's wire tables, it keeps no copy", () => {
  it("finds the emulator's sources", () => {
    expect(files.length).toBeGreaterThan(20);
  });

  for (const name of SHARED) {
    it(`${name}: no emulator source quotes its values`, () => {
      const values = valuesOf(client[name]);
      expect(values.length).toBeGreaterThan(0);
      const enough = Math.min(values.length, 3);
      const copies = files.filter((f) => values.filter((v) => quotes(f.text, v)).length >= enough).map((f) => f.path);
      expect(copies).toEqual([]);
    });
  }
});
