/**
 * The floors of the source tree: the transport (`src/http/`) imports nothing above it, the stores only the
 * transport's errors and types, the shared `/models` records only the transport, and the actions that take a client never import `src/client.ts` (which composes them). Read from the sources' import statements (static, dynamic and type-only), so a
 * new upward arrow fails here before it becomes a cycle. The emulator's package (packages/langchain-service-emulator/src)
 * keeps the same floors: no circle, no file over 700 lines, and no relative import across the packages' boundary
 * in either direction (it reaches the client only by its name, `langchain-service`).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));
const EMULATOR_SRC = fileURLToPath(new URL("../../packages/langchain-service-emulator/src/", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : /\.m?ts$/.test(name) ? [path] : [];
  });
}

/** Every relative module a file imports, as a path under `root` (src/ unless told). */
function importsOf(file: string, root = SRC): string[] {
  const text = readFileSync(file, "utf8");
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["'](\.{1,2}\/[^"']+)["']/g)].map((m) => m[1]!);
  return specs.map((spec) => relative(root, resolve(dirname(file), spec)));
}

function arrowsOut(floor: string, allowed: string[]): string[] {
  return sources(join(SRC, floor)).flatMap((file) =>
    importsOf(file)
      .filter((target) => !allowed.some((a) => target.startsWith(a)))
      .map((target) => `${relative(SRC, file)} -> ${target}`),
  );
}

/** The import graph of a package's sources: file -> the files it imports (static, dynamic and type-only). */
function importGraph(root = SRC): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(root))
    graph.set(
      relative(root, file),
      importsOf(file, root).map((t) => t.replace(/\.js$/, ".ts")),
    );
  return graph;
}

/** Relative imports of `root`'s files that leave `root` (a path starting with `..`). */
function arrowsLeaving(root: string): string[] {
  return sources(root).flatMap((file) =>
    importsOf(file, root)
      .filter((target) => target.startsWith(".."))
      .map((target) => `${relative(root, file)} -> ${target}`),
  );
}

/** Every import circle of a graph (strongly connected groups of two or more files, or a file importing itself). */
function circlesIn(graph: Map<string, string[]>): string[][] {
  // Tarjan's strongly connected components
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || graph.get(v)!.includes(v)) found.push(group.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe("the floors of src/", () => {
  it("src/ has no import circle (static, dynamic and type-only arrows alike)", () => {
    expect(circlesIn(importGraph())).toEqual([]);
  });

  it("the circle finder finds circles: the real graph with one arrow back added, and a scratch graph", () => {
    const graph = importGraph();
    expect(graph.get("http/headers.ts")).toContain("http/config.ts"); // headers reads the brand's names
    graph.get("http/config.ts")!.push("http/headers.ts"); // what config -> errors -> headers -> config once was
    expect(circlesIn(graph)).toEqual([["http/config.ts", "http/headers.ts"]]);
    const scratch = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
      ["d", ["a", "d"]],
    ]);
    expect(circlesIn(scratch)).toEqual([["a", "b", "c"], ["d"]]);
  });

  it("no source file is over 700 lines, in either package (a person reads one in a sitting)", () => {
    const long = [...sources(SRC), ...sources(EMULATOR_SRC)]
      .map((file) => [relative(join(SRC, ".."), file), readFileSync(file, "utf8").split("\n").length] as const)
      .filter(([, lines]) => lines > 700);
    expect(long).toEqual([]);
  });

  it("src/http/ imports only src/http/ (layers, stores and wallets are handed in from src/stack.ts)", () => {
    expect(arrowsOut("http", ["http/"])).toEqual([]);
  });

  it("src/store/ imports only src/store/ and src/http/", () => {
    expect(arrowsOut("store", ["store/", "http/"])).toEqual([]);
  });

  it("src/models/ imports only src/models/ and src/http/ (every face and the client import it without a circle)", () => {
    expect(arrowsOut("models", ["models/", "http/"])).toEqual([]);
  });

  it("actions that take a client (src/api/, src/media/, src/account/, src/x402/client.ts) never import src/client.ts: its shape and request helper come from src/api/request.ts", () => {
    const actions = [
      ...sources(join(SRC, "api")),
      ...sources(join(SRC, "media")),
      ...sources(join(SRC, "account")),
      join(SRC, "x402", "client.ts"),
    ];
    expect(
      actions.flatMap((file) =>
        importsOf(file)
          .filter((t) => t === "client.js")
          .map((t) => `${relative(SRC, file)} -> ${t}`),
      ),
    ).toEqual([]);
  });

  it("the scan sees imports (a known file's arrows are found)", () => {
    expect(importsOf(join(SRC, "stack.ts"))).toEqual(expect.arrayContaining(["http/fetch-stack.js", "x402/index.js"]));
  });
});

describe("the emulator package and the client stay two packages", () => {
  it("the emulator's src has no import circle", () => {
    expect(circlesIn(importGraph(EMULATOR_SRC))).toEqual([]);
  });

  it('no relative import crosses the boundary: the emulator reaches the client only as "langchain-service", the client never the emulator', () => {
    expect(arrowsLeaving(EMULATOR_SRC)).toEqual([]);
    expect(arrowsLeaving(SRC)).toEqual([]);
  });

  it("the boundary scan sees a crossing (an arrow out of the emulator's tree is reported)", () => {
    expect(importsOf(join(EMULATOR_SRC, "index.ts"), EMULATOR_SRC)).toContain("server.js");
    expect(importsOf(join(EMULATOR_SRC, "index.ts"), SRC).some((t) => t.startsWith(".."))).toBe(true);
  });

  it("the emulator imports the client by its name", () => {
    expect(readFileSync(join(EMULATOR_SRC, "index.ts"), "utf8")).toMatch(/from "langchain-service"/);
  });
});
