import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", "chat/index": "src/chat/index.ts", "emulator/index": "src/emulator/index.ts", "emulator/cli": "src/emulator/cli.ts", "redis/index": "src/redis/index.ts", "evm/index": "src/evm/index.ts", "solana/index": "src/solana/index.ts" },
  format: ["esm", "cjs"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
  splitting: true,
});
