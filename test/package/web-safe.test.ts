/**
 * No client entry loads a Node builtin: walked from each entry through every import a bundler follows (static,
 * and `import("literal")`), no `node:` module is reached (the Node base is `#base`'s `node` condition, not walked).
 * And the byte helpers that replaced `Buffer`, and the Solana wallet's Ed25519, work with `Buffer` gone.
 */
import { readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { base64ToBytes, bytesToBase64, utf8Length } from "../../src/runtime/bytes.js";
import { sniffImage, wavDurationSeconds } from "../../src/media/sniff.js";
import { decodeBase64Float32 } from "../../src/embeddings/wire.js";
import { fromBase64Json, toBase64Json } from "../../src/x402/encoding.js";
import { SolanaWallet } from "../../src/solana/index.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** value imports a bundler follows: `import … from`, `export … from`, `import "x"`, `import("x")` */
function importsOf(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      const typeOnly = ts.isImportDeclaration(node) ? node.importClause?.isTypeOnly : node.isTypeOnly;
      if (!typeOnly) out.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) out.push(arg.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

const isBuiltin = (s: string) => s.startsWith("node:") || builtinModules.includes(s.split("/")[0]!);

/** `builtin <- file` for every Node builtin reached from the entry through our own modules */
function builtinsReached(entry: string): string[] {
  const seen = new Set<string>();
  const found: string[] = [];
  const walk = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const rel = relative(ROOT, file);
    for (const spec of importsOf(file)) {
      if (spec.startsWith(".")) walk(resolve(dirname(file), spec.replace(/\.js$/, ".ts")));
      else if (isBuiltin(spec)) found.push(`${spec} <- ${rel}`);
    }
  };
  walk(join(ROOT, entry));
  return found.sort();
}

describe("no client entry imports a Node builtin at load", () => {
  // the wallet entries too: util.inspect's hook by its symbol, Ed25519 from @noble/curves, randomness from WebCrypto
  const entries = [
    "src/index.ts",
    "src/chat/index.ts",
    "src/redis/index.ts",
    "src/evm/index.ts",
    "src/solana/index.ts",
    "src/agents/index.ts",
    "src/solana-connection/index.ts",
  ];
  for (const entry of entries) {
    it(`${entry}: none outside the base`, () => {
      expect(builtinsReached(entry)).toEqual([]);
    });
  }
});

describe("bytes without Buffer", () => {
  const withoutBuffer = <T>(f: () => T): T => {
    const saved = globalThis.Buffer;
    // @ts-expect-error: a runtime without Buffer (a browser, a worker)
    delete globalThis.Buffer;
    try {
      return f();
    } finally {
      globalThis.Buffer = saved;
    }
  };

  it("base64 and UTF-8 lengths agree with Node's Buffer, and decode as leniently", () => {
    const bytes = Uint8Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 256);
    const text = "héllo \u{1F600} wörld \ud800";
    const [b64, back, len, urlSafe] = withoutBuffer(() => [
      bytesToBase64(bytes),
      base64ToBytes(""),
      utf8Length(text),
      base64ToBytes("-_8"),
    ]);
    expect(b64).toBe(Buffer.from(bytes).toString("base64"));
    expect(back).toEqual(new Uint8Array());
    expect(len).toBe(Buffer.byteLength(text, "utf8"));
    expect(urlSafe).toEqual(new Uint8Array(Buffer.from("-_8", "base64")));
    expect(base64ToBytes(" aGVs\nbG8 ")).toEqual(new Uint8Array(Buffer.from("hello")));
    expect(base64ToBytes("not base64!")).toBeUndefined();
  });

  it("the sniffers, the embeddings decoder and the x402 header JSON run with Buffer gone", () => {
    const png = new Uint8Array([
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 1, 0, 0, 0, 0, 200,
    ]);
    const wav = new Uint8Array(44 + 16_000);
    const view = new DataView(wav.buffer);
    wav.set(new TextEncoder().encode("RIFF"), 0);
    wav.set(new TextEncoder().encode("WAVEfmt "), 8);
    view.setUint32(16, 16, true);
    view.setUint32(28, 16_000, true); // byte rate
    wav.set(new TextEncoder().encode("data"), 36);
    view.setUint32(40, 16_000, true);
    const floats = Buffer.from(new Float32Array([1.5, -2]).buffer).toString("base64");
    const out = withoutBuffer(() => ({
      image: sniffImage(png),
      seconds: wavDurationSeconds(wav),
      vector: decodeBase64Float32(floats),
      json: fromBase64Json(toBase64Json({ a: "é" })),
    }));
    expect(out.image).toMatchObject({ mimeType: "image/png", width: 256, height: 200 });
    expect(out.seconds).toBe(1);
    expect(out.vector).toEqual([1.5, -2]);
    expect(out.json).toEqual({ a: "é" });
  });

  it("a Solana raw-key wallet is made, checked and signs with Buffer gone, and WebCrypto's Ed25519 verifies it", async () => {
    const data = new TextEncoder().encode("sign in");
    const { wallet, again, signature } = withoutBuffer(() => {
      const w = SolanaWallet.random();
      // the secret key's public half is checked against its seed
      const secret = Uint8Array.from([...crypto.getRandomValues(new Uint8Array(32)), ...w.publicKeyBytes]);
      expect(() => new SolanaWallet(secret)).toThrow(/does not match its seed/);
      return { wallet: w, again: SolanaWallet.random(), signature: w.signBytes(data) };
    });
    expect(again.address).not.toBe(wallet.address);
    expect(signature).toHaveLength(64);
    const key = await crypto.subtle.importKey("raw", Uint8Array.from(wallet.publicKeyBytes), { name: "Ed25519" }, false, ["verify"]);
    expect(await crypto.subtle.verify({ name: "Ed25519" }, key, Uint8Array.from(signature), data)).toBe(true);
    expect(await crypto.subtle.verify({ name: "Ed25519" }, key, Uint8Array.from(signature), new TextEncoder().encode("sign it"))).toBe(
      false,
    );
  });
});
