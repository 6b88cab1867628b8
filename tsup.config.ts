import { defineConfig } from "tsup";

export default defineConfig({
  entry: {
    index: "src/index.ts",
    "chat/index": "src/chat/index.ts",
    "redis/index": "src/redis/index.ts",
    "evm/index": "src/evm/index.ts",
    "solana/index": "src/solana/index.ts",
    "agents/index": "src/agents/index.ts",
    "solana-connection/index": "src/solana-connection/index.ts",
    // the two bases, each its own file: `#base` stays an import in the output, and package.json's `imports` picks
    // one by condition where the package is used (a worker's or a browser's bundler takes `default`, never undici)
    "http/base": "src/http/base.ts",
    "http/base.node": "src/http/base.node.ts",
    // evaluated before undici by base.node (its own file, so the order survives bundling: see the file)
    "http/keep-runtime-dispatcher": "src/http/keep-runtime-dispatcher.ts",
  },
  external: ["#base", "#keep-runtime-dispatcher"],
  format: ["esm", "cjs"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
  splitting: true,
});
