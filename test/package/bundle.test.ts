/**
 * It bundles: a user with only this package and `@langchain/core` installed bundles the main entry and the chat
 * entry with esbuild for a browser and for a worker (wrangler's settings), with no optional peer installed.
 * Two checks each: no module fails to resolve (the optional peers are made unresolvable, as for a user who
 * never installed them), and nothing in the bundle is a Node builtin. On failure the message lists each
 * offending import and the chain of modules from the entry that pulls it in (from esbuild's metafile).
 */
import { builtinModules } from "node:module";
import { relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type BuildOptions, type Metafile, type Plugin } from "esbuild";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** the optional peers: a user who wants the chat model or the plain client has none of them */
const OPTIONAL_PEERS = [
  "siwe",
  "@x402/core",
  "@x402/evm",
  "@x402/svm",
  "@solana/kit",
  "@solana/web3.js",
  "@solana-program/token",
  "viem",
  "ioredis",
  "langchain",
  "@langchain/langgraph",
  "ganache",
  "solc",
  "litesvm",
];
const BUILTINS = new Set(builtinModules);

const packageOf = (specifier: string): string => {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
};
const isBuiltin = (specifier: string): boolean => specifier.startsWith("node:") || BUILTINS.has(packageOf(specifier));

const TARGETS: Record<string, BuildOptions> = {
  browser: { platform: "browser" },
  // a Cloudflare worker without nodejs_compat: the worker conditions first, packages' browser maps honoured
  worker: { platform: "browser", conditions: ["workerd", "worker", "browser"] },
};

const ENTRIES: Record<string, string> = {
  "langchain-service": `export { ChatService, ServiceClient, CryptoRpcToolkit } from "./src/index.ts";`,
  "langchain-service/chat": `export { ChatService } from "./src/chat/index.ts";`,
};

interface Offence {
  /** the import as written */
  specifier: string;
  /** the module that imports it, then its importers back to the entry */
  chain: string[];
}

/**
 * One bundle. An optional peer or a Node builtin that esbuild cannot resolve for the target (a package's
 * `browser` map may still answer it) is recorded and left external, so the build completes and its metafile
 * says who imports it.
 */
async function bundle(code: string, target: BuildOptions, installed: string[] = []): Promise<{ peers: Offence[]; builtins: Offence[] }> {
  const found: { kind: "peer" | "builtin"; specifier: string; importer: string }[] = [];
  const plugin: Plugin = {
    name: "absent-peers-and-builtins",
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === "plain") return undefined;
        if (OPTIONAL_PEERS.includes(packageOf(args.path)) && !installed.includes(packageOf(args.path))) {
          found.push({ kind: "peer", specifier: args.path, importer: args.importer });
          return { path: args.path, external: true };
        }
        if (!isBuiltin(args.path)) return undefined;
        const plain = await b.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          pluginData: "plain",
        });
        if (plain.errors.length === 0 && !plain.external) return plain;
        found.push({ kind: "builtin", specifier: args.path, importer: args.importer });
        return { path: args.path, external: true };
      });
    },
  };
  const result = await build({
    stdin: { contents: code, resolveDir: ROOT, loader: "ts", sourcefile: "entry.ts" },
    bundle: true,
    write: false,
    format: "esm",
    minify: true,
    metafile: true,
    logLevel: "silent",
    plugins: [plugin],
    ...target,
  });
  const importersOf = importers(result.metafile!);
  const offence = (f: (typeof found)[number]): Offence => ({ specifier: f.specifier, chain: chainOf(rel(f.importer), importersOf) });
  const unique = (list: Offence[]) => [...new Map(list.map((o) => [`${o.specifier} <- ${o.chain[0]}`, o])).values()];
  return {
    peers: unique(found.filter((f) => f.kind === "peer").map(offence)),
    builtins: unique(found.filter((f) => f.kind === "builtin").map(offence)),
  };
}

/** a module's name in the report: `src/…` for ours, `node_modules/…` for a package's (metafile paths are relative to the cwd) */
function rel(path: string): string {
  const abs = resolve(process.cwd(), path);
  const at = abs.indexOf("/node_modules/");
  return at >= 0 ? abs.slice(at + 1) : relative(ROOT, abs);
}

/** module → the modules that import it (metafile paths are relative to the working directory) */
function importers(meta: Metafile): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [file, input] of Object.entries(meta.inputs)) {
    for (const imp of input.imports) {
      if (imp.external) continue;
      const list = out.get(rel(imp.path)) ?? [];
      list.push(rel(file));
      out.set(rel(imp.path), list);
    }
  }
  return out;
}

/** the shortest chain of importers from a module back to the entry */
function chainOf(start: string, importersOf: Map<string, string[]>): string[] {
  const previous = new Map<string, string>([[start, ""]]);
  const queue = [start];
  while (queue.length) {
    const at = queue.shift()!;
    for (const up of importersOf.get(at) ?? []) {
      if (previous.has(up)) continue;
      previous.set(up, at);
      if (up.endsWith("entry.ts")) {
        const chain = [up];
        for (let n = at; n; n = previous.get(n)!) chain.push(n);
        return chain.reverse();
      }
      queue.push(up);
    }
  }
  return [start];
}

/** one line per offending import: `specifier  <-  importer  <-  …  <-  entry.ts` */
const describeOffences = (list: Offence[]): string[] => list.map((o) => `${o.specifier}  <-  ${o.chain.join("  <-  ")}`).sort();

describe("the entries bundle for browsers and workers with no optional peer installed", () => {
  for (const [name, code] of Object.entries(ENTRIES)) {
    for (const [targetName, target] of Object.entries(TARGETS)) {
      describe(`${name} for a ${targetName}`, () => {
        const result = bundle(code, target);

        it("resolves every module without the optional peers", async () => {
          const { peers } = await result;
          expect(describeOffences(peers), "optional peers a bundler must resolve").toEqual([]);
        });

        it("pulls in no Node builtin", async () => {
          const { builtins } = await result;
          expect(describeOffences(builtins), "Node builtins in the bundle").toEqual([]);
        });
      });
    }
  }
});

/**
 * The entries of optional peers, for a user who installed those peers: still no Node builtin (util.inspect's hook
 * is reached by its symbol, Ed25519 comes from @noble/curves, randomness from WebCrypto), and no other peer.
 */
/**
 * What a peer's own worker build brings, as its authors chose: @solana/kit's `workerd` condition picks its Node
 * build, which needs `events` (there under nodejs_compat, which the wallets on a worker need anyway). The browser
 * bundles take none.
 */
const PEERS_WORKER_BUILTINS = [{ specifier: "events", from: "node_modules/@solana/" }];
const byPeerForWorker = (o: Offence) =>
  PEERS_WORKER_BUILTINS.some((p) => o.specifier === p.specifier && o.chain.some((m) => m.startsWith(p.from)));

const PEER_ENTRIES: Record<string, { code: string; installed: string[] }> = {
  "langchain-service/evm": {
    code: `export { EvmWallet, smartAccountSigner } from "./src/evm/index.ts";`,
    installed: ["viem", "@x402/core", "@x402/evm"],
  },
  "langchain-service/solana": {
    code: `export { SolanaWallet } from "./src/solana/index.ts";`,
    installed: ["@solana/kit", "@x402/core", "@x402/svm", "@solana-program/token"],
  },
};

describe("the wallet entries bundle for browsers and workers with their own peers installed", () => {
  for (const [name, { code, installed }] of Object.entries(PEER_ENTRIES)) {
    for (const [targetName, target] of Object.entries(TARGETS)) {
      describe(`${name} for a ${targetName}`, () => {
        const result = bundle(code, target, installed);

        it("needs no optional peer but its own", async () => {
          const { peers } = await result;
          expect(describeOffences(peers), "optional peers beyond the entry's own").toEqual([]);
        });

        it(
          targetName === "browser" ? "pulls in no Node builtin" : "pulls in no Node builtin but its peers' own worker builds'",
          async () => {
            const { builtins } = await result;
            const ours = targetName === "browser" ? builtins : builtins.filter((o) => !byPeerForWorker(o));
            expect(describeOffences(ours), "Node builtins in the bundle").toEqual([]);
          },
        );
      });
    }
  }
});
