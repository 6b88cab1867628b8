/**
 * The stack is one list: the README draws it, `createTransport` composes it, and the two name the same layers in
 * the same order (DESIGN.md, "The stack is a list").
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { STACK_LAYERS } from "../../src/http/fetch-stack.js";

const ROOT = join(import.meta.dirname, "..", "..");

/** The layer names of the README's drawing: the first word(s) of each line of the block after "fetch stack". */
function readmeLayers(): string[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const at = readme.indexOf("goes through the same fetch stack");
  expect(at).toBeGreaterThan(0);
  const block = /```text\n([\s\S]*?)```/.exec(readme.slice(at));
  expect(block).not.toBeNull();
  return block![1]!
    .split("\n")
    .filter((line) => line.trim())
    .map((line) => line.split(/\s{2,}/)[0]!.trim());
}

/** The names in the list `createTransport` composes, in the order written. */
function composedLayers(): string[] {
  const source = readFileSync(join(ROOT, "src/http/fetch-stack.ts"), "utf8");
  const list = /const layers: \[StackLayerName, FetchLayer \| undefined\]\[\] = \[([\s\S]*?)\n {2}\];/.exec(source);
  expect(list).not.toBeNull();
  return [...list![1]!.matchAll(/^\s*\["([a-z -]+)",/gm)].map((m) => m[1]!);
}

describe("the stack is a list", () => {
  it("the README's drawing names the layers of the list, layer by layer", () => {
    expect(readmeLayers()).toEqual([...STACK_LAYERS]);
  });

  it("createTransport composes exactly that list, in that order", () => {
    expect(composedLayers()).toEqual([...STACK_LAYERS]);
  });

  it("in DESIGN.md's order", () => {
    expect([...STACK_LAYERS]).toEqual([
      "errors",
      "deadline",
      "spend",
      "payment",
      "retry",
      "concurrency",
      "pacing",
      "abuse guard",
      "sign-in",
      "redirects",
      "body limits",
      "base",
    ]);
  });
});
