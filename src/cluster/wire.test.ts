import type pg from "pg";
import { describe, expect, it } from "vitest";
import { configSchema } from "../config/schema.js";
import { silentLogger } from "../infra/logger.js";
import type { ClusterStore } from "./types.js";
import { clusterNodeFor } from "./wire.js";

/** Only the parts the node reads at construction; nothing here connects. */
function fakePostgresStore(): ClusterStore {
  return {
    kind: "postgres",
    pool: {} as pg.Pool,
    channel: "loopgate_events",
    notifier: async () => {
      throw new Error("not connected in this test");
    },
  } as unknown as ClusterStore;
}

describe("the cluster node of a gateway", () => {
  it("storage.postgres.leaseMs sets the lease of a Postgres gateway's node: its heartbeat, takeover and sweep every third", async () => {
    const config = configSchema.parse({ storage: { backend: "postgres", postgres: { leaseMs: 1500 } } });
    const node = clusterNodeFor(fakePostgresStore(), config, silentLogger);
    expect(node.leaseMs).toBe(1500);
    expect(node.intervalMs).toBe(500);
    const byDefault = clusterNodeFor(fakePostgresStore(), configSchema.parse({}), silentLogger);
    expect(byDefault.leaseMs).toBe(15_000);
    expect(byDefault.intervalMs).toBe(5000);
  });

  it("cluster.nodeId names the node (kept across restarts); unset, each start gets <hostname>-<pid>-<random>", () => {
    const named = clusterNodeFor(
      fakePostgresStore(),
      configSchema.parse({ storage: { backend: "postgres" }, cluster: { nodeId: "gw-eu-1" } }),
      silentLogger,
    );
    expect(named.nodeId).toBe("gw-eu-1");
    const unnamed = clusterNodeFor(fakePostgresStore(), configSchema.parse({}), silentLogger);
    expect(unnamed.nodeId).toMatch(new RegExp(`-${process.pid}-[0-9a-f]{6}$`));
    const bad = configSchema.safeParse({ cluster: { nodeId: "has space" } });
    expect(JSON.stringify(bad.error?.issues[0]?.path)).toBe('["cluster","nodeId"]');
  });

  it("refuses a lease too short to beat in, naming the key", () => {
    const parsed = configSchema.safeParse({ storage: { postgres: { leaseMs: 50 } } });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues[0]?.path)).toBe('["storage","postgres","leaseMs"]');
  });
});
