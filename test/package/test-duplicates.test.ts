/**
 * The payment, store and agent tests keep their shared setup in helper modules (test/x402/helpers.ts,
 * test/store/fleet-service.ts, test/store/redis-stores.ts, test/store/contract/): a block of code repeated in
 * two test files is a fixture or a service script that drifts apart the day one copy is fixed. This finds blocks
 * of WINDOW or more code lines that stand in two places.
 *
 * A copy-paste detector (jscpd) would do this by tokens; it is not a dependency here, so lines are compared
 * after trimming, leaving out blank lines, comments, imports and lines of closing brackets only.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const WINDOW = 8;
const FOLDERS = ["x402", "store", "agents"];
const TEST = new URL("../", import.meta.url);

interface Line {
  file: string;
  at: number;
  text: string;
}

function codeLines(file: string): Line[] {
  // imports are blanked, not removed, so that line numbers stay true
  const source = readFileSync(new URL(file, TEST), "utf8").replace(/^import\b[\s\S]*?;[ \t]*$/gm, (m) => m.replace(/[^\n]/g, ""));
  const lines: Line[] = [];
  let comment = false;
  source.split("\n").forEach((raw, i) => {
    const text = raw.trim();
    if (comment) {
      comment = !text.includes("*/");
      return;
    }
    if (text.startsWith("/*")) {
      comment = !text.includes("*/");
      return;
    }
    if (!text || text.startsWith("//") || /^[)\]}]+[);,]*$/.test(text)) return;
    lines.push({ file, at: i + 1, text });
  });
  return lines;
}

const files = FOLDERS.flatMap((folder) =>
  readdirSync(new URL(`${folder}/`, TEST), { recursive: true, encoding: "utf8" })
    .filter((path) => path.endsWith(".ts"))
    .map((path) => `${folder}/${path}`),
);

describe(`test/{${FOLDERS.join(",")}} repeat no block of ${WINDOW} code lines`, () => {
  it("finds the test files", () => {
    expect(files.length).toBeGreaterThan(30);
  });

  it("no block stands in two places (move it to the folder's helper module)", () => {
    const first = new Map<string, { line: Line; index: number }>();
    const repeats = new Set<string>();
    for (const file of files) {
      const lines = codeLines(file);
      for (let i = 0; i + WINDOW <= lines.length; i++) {
        const key = lines
          .slice(i, i + WINDOW)
          .map((l) => l.text)
          .join("\n");
        const seen = first.get(key);
        if (!seen) first.set(key, { line: lines[i]!, index: i });
        // within one file, only a block that does not overlap its first place
        else if (seen.line.file !== file || i - seen.index >= WINDOW)
          repeats.add(`${seen.line.file}:${seen.line.at} = ${file}:${lines[i]!.at}`);
      }
    }
    // one entry per repeated block: a longer block repeats many windows, keep the first of a run
    const blocks = [...repeats].filter((entry, i, all) => {
      const [a, b] = entry.split(" = ").map((p) => p.split(":"));
      const previous = all[i - 1]?.split(" = ").map((p) => p.split(":"));
      return !previous || previous[0]![0] !== a![0] || previous[1]![0] !== b![0];
    });
    expect(blocks).toEqual([]);
  });
});
