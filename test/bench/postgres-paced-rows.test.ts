import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

// The bench's row builder is plain JavaScript outside the compiled tree; loaded by URL so tsc does not type it.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const modUrl = pathToFileURL(path.join(root, "bench", "lib", "postgres-metrics.mjs")).href;

interface Row {
  id: string;
  value?: number;
  unit?: string;
  target?: { text: string; pass: (v: number) => boolean | null };
  reason?: string;
}

/** A paced result as summarizePaced leaves it: `max` ms per turn on the busiest node, `lateShare` of late turns. */
function paced(max: number, lateShare: number) {
  return { rate: 8, max, mean: max, maxNet: max, meanNet: max, late: 0, lateShare, turnP50: 20, turnsPerNode: 160 };
}

async function rowsFor(configs: Record<number, unknown>): Promise<Map<string, Row>> {
  const { postgresRows } = (await import(modUrl)) as { postgresRows: (res: unknown, row: (r: Row) => void) => void };
  const rows = new Map<string, Row>();
  postgresRows({ work: { sessions: 12, turns: 10 }, configs }, (r) => rows.set(r.id, r));
  return rows;
}

function verdict(r: Row | undefined): boolean | null | undefined {
  return r?.value === undefined ? undefined : r.target?.pass(r.value);
}

describe("bench: the paced per-node CPU growth row (issue 33 acceptance)", () => {
  it("passes when a node at 3 nodes spends at most 1.2 × the 1-node CPU per turn at the same load", async () => {
    const rows = await rowsFor({
      1: { paced: paced(10, 0) },
      2: { paced: paced(10.5, 0) },
      3: { paced: paced(11.5, 0) },
    });
    const g = rows.get("postgres.cpu.node.paced.growth");
    expect(g?.value).toBeCloseTo(1.15, 5);
    expect(verdict(g)).toBe(true);
  });

  it("fails when a node at 3 nodes spends more than 1.2 × per turn", async () => {
    const rows = await rowsFor({
      1: { paced: paced(10, 0) },
      2: { paced: paced(11, 0) },
      3: { paced: paced(13, 0.02) },
    });
    expect(verdict(rows.get("postgres.cpu.node.paced.growth"))).toBe(false);
  });

  it("is not judged, and says why, when the offered load was not met (a saturated machine)", async () => {
    const rows = await rowsFor({
      1: { paced: paced(10, 0.7) },
      2: { paced: paced(10, 0.7) },
      3: { paced: paced(11, 0.9) },
    });
    const g = rows.get("postgres.cpu.node.paced.growth");
    expect(g?.value).toBeCloseTo(1.1, 5);
    expect(verdict(g)).toBeNull();
    expect(g?.unit).toContain("offered load was not met");
  });

  it("keeps the saturation ratio report-only", async () => {
    const rows = await rowsFor({
      1: { paced: paced(10, 0), nodeCpuMsPerTurn: [9] },
      3: { paced: paced(11, 0), nodeCpuMsPerTurn: [18, 17, 16] },
    });
    const sat = rows.get("postgres.cpu.node.growth");
    expect(sat?.value).toBeCloseTo(2, 5);
    expect(sat?.target).toBeUndefined();
  });
});
