/**
 * The floors of the source tree: the transport (`src/http/`) imports nothing above it, the stores only the
 * transport's errors and types, the shared `/models` records only the transport, and the actions that take a client never import `src/client.ts` (which composes them). Read from the sources' import statements (static, dynamic and type-only), so a
 * new upward arrow fails here before it becomes a cycle.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : /\.m?ts$/.test(name) ? [path] : [];
  });
}

/** Every relative module a file imports, as a path under src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["'](\.{1,2}\/[^"']+)["']/g)].map((m) => m[1]!);
  return specs.map((spec) => relative(SRC, resolve(dirname(file), spec)));
}

function arrowsOut(floor: string, allowed: string[]): string[] {
  return sources(join(SRC, floor)).flatMap((file) =>
    importsOf(file)
      .filter((target) => !allowed.some((a) => target.startsWith(a)))
      .map((target) => `${relative(SRC, file)} -> ${target}`),
  );
}

describe("the floors of src/", () => {
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
    const actions = [...sources(join(SRC, "api")), ...sources(join(SRC, "media")), ...sources(join(SRC, "account")), join(SRC, "x402", "client.ts")];
    expect(actions.flatMap((file) => importsOf(file).filter((t) => t === "client.js").map((t) => `${relative(SRC, file)} -> ${t}`))).toEqual([]);
  });

  it("the scan sees imports (a known file's arrows are found)", () => {
    expect(importsOf(join(SRC, "stack.ts"))).toEqual(expect.arrayContaining(["http/fetch-stack.js", "x402/index.js"]));
  });
});
