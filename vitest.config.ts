import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const at = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    // both workspace packages by name, from source (as tsconfig's paths): tests need no build
    alias: [
      { find: /^langchain-service-emulator$/, replacement: at("./packages/langchain-service-emulator/src/index.ts") },
      { find: /^langchain-service$/, replacement: at("./src/index.ts") },
      { find: /^langchain-service\/chat$/, replacement: at("./src/chat/index.ts") },
      { find: /^langchain-service\/redis$/, replacement: at("./src/redis/index.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts", "src/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: integration files start servers and local chains; keep parallelism modest.
    maxWorkers: 2,
    pool: "forks",
    // one line when the Redis store suite cannot run (or a failure under REQUIRE_REDIS=1)
    globalSetup: ["test/store/redis-global-setup.ts"],
  },
});
