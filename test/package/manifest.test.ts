/**
 * Install weight, checked against the source: what package.json declares is exactly what src imports, and
 * what a user must install is only what is loaded eagerly. A package imported only through `import()` (the
 * wallet, emulator and adapter faces) is an optional peer, so an API-key chat user does not install it;
 * `langchain-service/chat` loads nothing but LangChain and zod. (`npm run bench -- package` measures the
 * installed packages, MB and cold-import time beside `@langchain/openai`.)
 */
import { readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies?: Record<string, string>;
};
const deps = pkg.dependencies ?? {};
const peers = pkg.peerDependencies ?? {};
const optionalPeers = new Set(Object.keys(peers).filter((n) => pkg.peerDependenciesMeta?.[n]?.optional));
const requiredPeers = new Set(Object.keys(peers).filter((n) => !optionalPeers.has(n)));

interface Imports {
  /** value imports loaded when the module loads: `import x from`, `export … from`, `import "x"` */
  static: string[];
  /** `import("x")` */
  dynamic: string[];
}

/** A module's imports (type-only ones left out: they do not load anything). */
function importsOf(file: string): Imports {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const out: Imports = { static: [], dynamic: [] };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const typeOnly =
        clause?.isTypeOnly ||
        (clause &&
          !clause.name &&
          clause.namedBindings &&
          ts.isNamedImports(clause.namedBindings) &&
          clause.namedBindings.elements.length > 0 &&
          clause.namedBindings.elements.every((e) => e.isTypeOnly));
      if (!typeOnly) out.static.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const typeOnly =
        node.isTypeOnly ||
        (node.exportClause &&
          ts.isNamedExports(node.exportClause) &&
          node.exportClause.elements.length > 0 &&
          node.exportClause.elements.every((e) => e.isTypeOnly));
      if (!typeOnly) out.static.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) out.dynamic.push(arg.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`; undefined for relative and node builtins. */
function packageOf(specifier: string): string | undefined {
  // `#base`: the package's own import (src/package.json), not a package
  if (specifier.startsWith(".") || specifier.startsWith("#") || specifier.startsWith("node:") || builtinModules.includes(specifier))
    return undefined;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : /\.ts$/.test(e.name) && !/\.d\.ts$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

const files = sourceFiles(join(ROOT, "src"));
const staticPackages = new Set<string>();
const dynamicPackages = new Set<string>();
for (const file of files) {
  const { static: s, dynamic: d } = importsOf(file);
  for (const spec of s) {
    const name = packageOf(spec);
    if (name) staticPackages.add(name);
  }
  for (const spec of d) {
    const name = packageOf(spec);
    if (name) dynamicPackages.add(name);
  }
}
/** Type-only references count as uses for "nothing declared is unused" (a peer can be there for its types). */
const referenced = new Set<string>([...staticPackages, ...dynamicPackages]);
for (const file of files) {
  for (const m of readFileSync(file, "utf8").matchAll(/(?:from\s+|import\()\s*["']([^"'.][^"']*)["']/g)) {
    const name = packageOf(m[1]!);
    if (name) referenced.add(name);
  }
}

/** the entries that import optional peers statically: a user who imports one has them */
const PEER_ENTRIES = ["src/evm/index.ts", "src/solana/index.ts", "src/agents/index.ts", "src/solana-connection/index.ts"];

/** Bare packages reached from `entry` through static value imports only (what loading it loads). */
function eagerPackages(entry: string): Set<string> {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const walk = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const spec of importsOf(file).static) {
      if (spec.startsWith(".")) walk(resolve(dirname(file), spec.replace(/\.js$/, ".ts")));
      // a package import, as Node resolves it (the `node` condition: the Node base)
      else if (spec === "#base") walk(join(ROOT, "src/http/base.node.ts"));
      else {
        const name = packageOf(spec);
        if (name) packages.add(name);
      }
    }
  };
  walk(join(ROOT, entry));
  return packages;
}

describe("package.json declares what src uses, and no more", () => {
  it("every package src imports is a dependency or a peer", () => {
    const undeclared = [...referenced].filter((n) => !(n in deps) && !(n in peers));
    expect(undeclared).toEqual([]);
  });

  it("every dependency and peer is imported somewhere in src", () => {
    const unused = [...Object.keys(deps), ...Object.keys(peers)].filter((n) => !referenced.has(n));
    expect(unused).toEqual([]);
  });

  it("a package loaded eagerly is installed for everyone (a dependency or a required peer), but by the peer entries", () => {
    // langchain-service/evm, /solana, /agents and /solana-connection import their optional peers statically:
    // importing one says they are installed
    const walletOnly = new Set(PEER_ENTRIES.flatMap((e) => [...eagerPackages(e)]).filter((n) => optionalPeers.has(n)));
    const optional = [...staticPackages].filter((n) => !(n in deps) && !requiredPeers.has(n) && !walletOnly.has(n));
    expect(optional).toEqual([]);
  });

  it("a package only ever loaded through import() is an optional peer, not installed for everyone", () => {
    const lazyOnly = [...dynamicPackages].filter((n) => !staticPackages.has(n));
    expect(lazyOnly.filter((n) => !optionalPeers.has(n))).toEqual([]);
    expect(Object.keys(deps).filter((n) => !staticPackages.has(n))).toEqual([]);
  });

  it("optional peers are dev dependencies here, so the suite exercises them", () => {
    expect([...optionalPeers].filter((n) => !pkg.devDependencies?.[n])).toEqual([]);
  });

  it("@langchain/openai is a caret range that takes both the Node 20 line (1.5.8) and the Node 22 line (1.6)", () => {
    const range = deps["@langchain/openai"] ?? peers["@langchain/openai"] ?? "";
    const m = /^\^1\.(\d+)\.(\d+)$/.exec(range);
    expect(m, `@langchain/openai range ${range}`).not.toBeNull();
    const [minor, patch] = [Number(m![1]), Number(m![2])];
    expect(minor < 5 || (minor === 5 && patch <= 8)).toBe(true);
  });
});

describe("what each entry point loads", () => {
  it("langchain-service/chat loads only LangChain, zod, the SSE parser and (on Node) undici", () => {
    expect([...eagerPackages("src/chat/index.ts")].sort()).toEqual([
      "@langchain/core",
      "@langchain/openai",
      "eventsource-parser",
      "undici",
      "zod",
    ]);
  });

  it("langchain-service loads only dependencies and required peers (ethers for the crypto tools and wallets)", () => {
    const eager = [...eagerPackages("src/index.ts")];
    expect(eager.filter((n) => !(n in deps) && !requiredPeers.has(n))).toEqual([]);
  });
});

describe("the entries of optional peers", () => {
  it("langchain-service/evm and /solana load their chain's optional peers, and no other optional peer", () => {
    const optional = (entry: string) => [...eagerPackages(entry)].filter((n) => optionalPeers.has(n)).sort();
    expect(optional("src/evm/index.ts")).toEqual(["@x402/core", "@x402/evm", "viem"]);
    expect(optional("src/solana/index.ts")).toEqual(["@solana/kit", "@x402/core", "@x402/svm"]);
  });

  it("langchain-service/agents loads @langchain/langgraph and /solana-connection @solana/web3.js, and no other optional peer", () => {
    const optional = (entry: string) => [...eagerPackages(entry)].filter((n) => optionalPeers.has(n)).sort();
    expect(optional("src/agents/index.ts")).toEqual(["@langchain/langgraph"]);
    expect(optional("src/solana-connection/index.ts")).toEqual(["@solana/web3.js"]);
  });

  it("the main entry loads no optional peer, not even through import() of a literal (a bundler resolves those)", () => {
    const reached = new Set<string>();
    const seen = new Set<string>();
    const walk = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const { static: s, dynamic: d } = importsOf(file);
      for (const spec of [...s, ...d]) {
        if (spec.startsWith(".")) walk(resolve(dirname(file), spec.replace(/\.js$/, ".ts")));
        else if (spec === "#base") walk(join(ROOT, "src/http/base.ts"));
        else {
          const name = packageOf(spec);
          if (name && optionalPeers.has(name)) reached.add(`${name} <- ${file.slice(ROOT.length)}`);
        }
      }
    };
    walk(join(ROOT, "src/index.ts"));
    expect([...reached].sort()).toEqual([]);
  });
});

describe("the emulator package (packages/langchain-service-emulator) declares what its src uses", () => {
  const dir = join(ROOT, "packages", "langchain-service-emulator");
  const emu = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as typeof pkg;
  const emuDeps = emu.dependencies ?? {};
  const emuPeers = emu.peerDependencies ?? {};
  const emuOptional = new Set(Object.keys(emuPeers).filter((n) => emu.peerDependenciesMeta?.[n]?.optional));
  const eager = new Set<string>();
  const lazy = new Set<string>();
  for (const file of sourceFiles(join(dir, "src"))) {
    const { static: s, dynamic: d } = importsOf(file);
    for (const name of s.map(packageOf)) if (name) eager.add(name);
    for (const name of d.map(packageOf)) if (name) lazy.add(name);
  }

  it("every package it imports is a dependency or a peer, and each of those is imported", () => {
    const used = new Set([...eager, ...lazy]);
    expect([...used].filter((n) => !(n in emuDeps) && !(n in emuPeers))).toEqual([]);
    expect([...Object.keys(emuDeps), ...Object.keys(emuPeers)].filter((n) => !used.has(n))).toEqual([]);
  });

  it("the client is a required peer (one copy of its classes), and what loads eagerly is installed for everyone", () => {
    expect(emuPeers["langchain-service"]).toBe(`^${(pkg as { version?: string }).version}`);
    expect(emuOptional.has("langchain-service")).toBe(false);
    expect([...eager].filter((n) => !(n in emuDeps) && !(n in emuPeers && !emuOptional.has(n)))).toEqual([]);
  });

  it("it loads no optional peer until a feature asks for it (the chain, Solana and x402 libraries are import()ed)", () => {
    expect([...eagerPackages("packages/langchain-service-emulator/src/index.ts")].filter((n) => emuOptional.has(n))).toEqual([]);
    expect([...lazy].filter((n) => !eager.has(n) && !emuOptional.has(n))).toEqual([]);
  });

  it("the client's package.json names no emulator-only library and not the emulator", () => {
    const named = new Set([...Object.keys(deps), ...Object.keys(peers)]);
    expect(
      ["langchain-service-emulator", "ganache", "solc", "litesvm", "@solana-program/token", "hono", "@hono/node-server"].filter((n) =>
        named.has(n),
      ),
    ).toEqual([]);
  });
});
