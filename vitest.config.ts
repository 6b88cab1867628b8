import { defineConfig } from "vitest/config";

export default defineConfig({
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
