import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Every row `npm run bench` reports; a metric that silently disappears fails this test. */
const EXPECTED_METRICS = [
  "floor.turn",
  "floor.turn.p99",
  "floor.turn.cpu",
  "floor.throughput",
  "floor.rpc",
  "floor.start",
  "embedded.turn.p50",
  "embedded.turn.p99",
  "embedded.turn.cpu",
  "gateway.turn.p50",
  "gateway.turn.p99",
  "gateway.turn.cpu",
  "gateway.turn.metrics.p50",
  "gateway.turn.metrics.cpu",
  "gateway.throughput.8x5",
  "gateway.throughput.100x10",
  "cli.local",
  "cli.remote",
  "cli.remote.bare",
  "gateway.start",
  "gateway.start.script",
  "gateway.rss.start",
  "gateway.rss",
  "idle.session",
  "idle.session.rss",
  "lock.uncontended",
  "lock.handoff",
  "transcript.append",
  "transcript.append.batched",
  "stream.maxN",
  "stream.maxN.cpu",
  "floor.stream",
  "floor.stream.widest",
  "floor.stream.receive",
  "stream.cpu",
  "stream.bytes",
  "stream.lag.p99",
  "stream.bytes.short",
  "stream.bytes.long",
  "stream.bytes.chat.short",
  "stream.bytes.chat.long",
  // Postgres rows: measured when LOOPGATE_TEST_POSTGRES_URL is set (CI), else "not available" with the reason
  "postgres.sqlite.throughput",
  "postgres.sqlite.turn.p50",
  "sandbox.exec",
  "postgres.sqlite.cpu",
  "postgres.commit",
  ...[1, 2, 3].flatMap((n) =>
    ["throughput", "turn.p50", "cpu", "cpu.node", "cpu.node.paced", "pg.cpu", "writes", "notify", "commits"].map(
      (m) => `postgres.n${n}.${m}`,
    ),
  ),
  "postgres.cpu.node.paced.growth",
  "postgres.cpu.node.paced.growth.n2",
  "postgres.cpu.node.paced.net.growth",
  "postgres.cpu.node.growth",
  "postgres.cpu.node.net.growth",
  "postgres.bystander",
];

interface MetricRow {
  id: string;
  value: number | null;
  notAvailable?: string;
  target: string;
  pass: boolean | null;
}

function runBench(out: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["bench/run.mjs", "--quick", `--out=${out}`], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    // bounded: a hung metric must fail the test, not hold the suite
    const timer = setTimeout(() => child.kill("SIGKILL"), 540_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe("npm run bench -- --quick", () => {
  it("produces every metric: a number, or 'not available' with a reason", { timeout: 600_000 }, async () => {
    if (!fs.existsSync(path.join(root, "dist", "agent", "service.js"))) {
      throw new Error("dist/ is missing: run `npm run build` first (the bench imports the compiled code)");
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-bench-smoke-"));
    const out = path.join(dir, "quick.json");
    try {
      const { code, stdout, stderr } = await runBench(out);
      expect(code, stderr.slice(-2000)).toBe(0);
      expect(stdout).toContain("| metric | value | floor | ratio to floor | target | pass |");

      const results = JSON.parse(fs.readFileSync(out, "utf8")) as { quick: boolean; metrics: MetricRow[] };
      expect(results.quick).toBe(true);
      expect(results.metrics.map((m) => m.id).sort()).toEqual([...EXPECTED_METRICS].sort());
      for (const m of results.metrics) {
        if (m.value === null) {
          // "not available" must say why
          expect(typeof m.notAvailable, m.id).toBe("string");
          expect(m.notAvailable?.length, m.id).toBeGreaterThan(0);
        } else {
          expect(Number.isFinite(m.value), m.id).toBe(true);
        }
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
