import type pg from "pg";
import { systemClock } from "../infra/clock.js";
import { silentLogger } from "../infra/logger.js";
import { migratePostgres } from "../storage/postgres/migrate.js";
import { notify, notifyChannel, PgNotifier } from "../storage/postgres/notifier.js";
import { createPostgresPool, inTransaction, type PostgresOptions } from "../storage/postgres/pool.js";
import { notifyRunEvents } from "../storage/postgres/run-follower.js";
import type { Store, StoredRunEvent } from "../storage/types.js";
import { createTestSchema } from "../testing/postgres-schema.js";
import type { BusUnderTest } from "./bus.conformance.js";
import { PgEventBus } from "./pg-bus.js";
import { RunEventWriter } from "./run-event-writer.js";

/**
 * One gateway node's event half, for the bus tests: a pool, the LISTEN connection, the run-event writer and the bus,
 * as the runtime wires them. Its store holds only what the bus and the writer use (run events, announced at COMMIT
 * as PostgresStore.appendRunEvents does); run records are not part of these tests.
 */
export interface BusNode {
  bus: PgEventBus;
  writer: RunEventWriter;
  notifier: PgNotifier;
  pool: pg.Pool;
  channel: string;
  close(): Promise<void>;
}

export async function openBusNode(options: PostgresOptions): Promise<BusNode> {
  const pool = createPostgresPool({ ...options, poolMax: 4 });
  const channel = notifyChannel(options.schema);
  const notifier = new PgNotifier({ connection: options, channel, reconnect: { baseMs: 20, maxMs: 200 } });
  await notifier.start();
  const store = {
    kind: "postgres",
    async appendRunEvents(events: readonly StoredRunEvent[]) {
      return inTransaction(pool, async (c) => {
        let ignored = 0;
        for (const e of events) {
          const r = await c.query(
            "INSERT INTO run_events (run_id, seq, ts, session_key, stream, event) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
            [e.runId, e.seq, e.ts, e.sessionKey, e.stream, e.json],
          );
          ignored += r.rowCount === 0 ? 1 : 0;
        }
        await notifyRunEvents(c, channel, events);
        return { ignored };
      });
    },
    async lastRunEventSeq(runId: string) {
      const { rows } = await pool.query<{ m: number | null }>(
        "SELECT max(seq) AS m FROM run_events WHERE run_id = $1",
        [runId],
      );
      return rows[0]?.m ?? 0;
    },
    async getRun() {
      return undefined;
    },
    async listRuns() {
      return [];
    },
  } as unknown as Store;
  const writer = new RunEventWriter({ store, clock: systemClock, logger: silentLogger, flushDelayMs: 5 });
  const bus = new PgEventBus({
    source: { pool, channel, notifier: async () => notifier },
    store,
    beforeEndNotice: () => writer.flush(),
  });
  writer.attach(bus);
  await bus.ready();
  return {
    bus,
    writer,
    notifier,
    pool,
    channel,
    async close() {
      await writer.close();
      bus.close();
      await notifier.stop();
      await pool.end();
    },
  };
}

/**
 * Resolves once everything emitted so far on any node has reached every listener: each writer has stored its events,
 * a marker NOTIFY sent after them has reached every node (notifications arrive in commit order, so every pointer
 * before it has too), and the reads those pointers started are done.
 */
export async function settleNodes(nodes: BusNode[]): Promise<void> {
  for (const n of nodes) await n.writer.flush();
  const id = `${Date.now()}-${Math.random()}`;
  const heard = nodes.map(
    (n) =>
      new Promise<void>((resolve) => {
        const off = n.notifier.subscribe((p) => {
          if (p.k === "sync" && p.id === id) {
            off();
            resolve();
          }
        });
      }),
  );
  await notify(nodes[0].pool, nodes[0].channel, { k: "sync", id });
  await Promise.all(heard);
  for (const n of nodes) await n.bus.idle();
  // a read can end with an end notice still to come (announced after a flush): wait for those too
  for (const n of nodes) await n.bus.idle();
}

/** Two nodes on a fresh schema: `bus` emits on node A, `peer` listens on node B. */
export async function openTwoNodeBus(url: string): Promise<BusUnderTest & { nodes: BusNode[] }> {
  const ts = await createTestSchema(url);
  const migrator = createPostgresPool(ts.options);
  try {
    await migratePostgres(migrator);
  } finally {
    await migrator.end();
  }
  const a = await openBusNode(ts.options);
  const b = await openBusNode(ts.options);
  return {
    bus: a.bus,
    peer: b.bus,
    nodes: [a, b],
    settle: () => settleNodes([a, b]),
    async close() {
      await a.close();
      await b.close();
      await ts.drop();
    },
  };
}
