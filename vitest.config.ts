import { defineConfig } from "vitest/config";

// The bench smoke run (`bench --quick`, ~11 s) is not part of the default `npm test`: it checks that every benchmark
// metric is still produced, which matters once per CI run, not on every local test run. CI runs it through
// `npm run test:bench-smoke`, which sets LOOPGATE_BENCH_SMOKE=1.
const benchSmoke = process.env.LOOPGATE_BENCH_SMOKE === "1";
// The long soak runs (test/e2e/soak-*.test.ts, minutes) are not part of `npm test` either; their short versions
// (test/e2e/chaos-*.test.ts, seconds) are. `npm run test:soak` sets LOOPGATE_SOAK=1 to run only the long ones.
const soak = process.env.LOOPGATE_SOAK === "1";
const soakFiles = "test/e2e/soak-*.test.ts";

export default defineConfig({
  test: {
    include: benchSmoke
      ? ["test/e2e/bench-smoke.test.ts"]
      : soak
        ? [soakFiles]
        : ["src/**/*.test.ts", "test/**/*.test.ts"],
    exclude: benchSmoke || soak ? [] : ["test/e2e/bench-smoke.test.ts", soakFiles, "**/node_modules/**"],
    testTimeout: 20000,
    hookTimeout: 20000,
    pool: "forks",
    globalSetup: ["test/setup/postgres-notice.ts"],
  },
});
