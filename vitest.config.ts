import { defineConfig } from "vitest/config";

// The bench smoke run (`bench --quick`, ~11 s) is not part of the default `npm test`: it checks that every benchmark
// metric is still produced, which matters once per CI run, not on every local test run. CI runs it through
// `npm run test:bench-smoke`, which sets LOOPGATE_BENCH_SMOKE=1.
const benchSmoke = process.env.LOOPGATE_BENCH_SMOKE === "1";

export default defineConfig({
  test: {
    include: benchSmoke ? ["test/e2e/bench-smoke.test.ts"] : ["src/**/*.test.ts", "test/**/*.test.ts"],
    exclude: benchSmoke ? [] : ["test/e2e/bench-smoke.test.ts", "**/node_modules/**"],
    testTimeout: 20000,
    hookTimeout: 20000,
    pool: "forks",
  },
});
