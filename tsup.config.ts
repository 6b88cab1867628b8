import { defineConfig } from "tsup";

export default defineConfig({
  entry: { index: "src/index.ts", "chat/index": "src/chat/index.ts", "redis/index": "src/redis/index.ts" },
  format: ["esm", "cjs"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
  splitting: true,
});
