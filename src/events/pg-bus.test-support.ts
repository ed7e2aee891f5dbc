import { systemClock } from "../infra/clock.js";
import { silentLogger } from "../infra/logger.js";
import { notify, type PgNotifier } from "../storage/postgres/notifier.js";
import type { PostgresOptions } from "../storage/postgres/pool.js";
import { openPostgresStore, type PostgresStore, type PostgresStoreOptions } from "../storage/postgres/store.js";
import { isTransientPostgresError } from "../storage/postgres/transient-errors.js";
import { createTestSchema } from "../testing/postgres-schema.js";
import type { BusUnderTest } from "./bus.conformance.js";
import { PgEventBus } from "./pg-bus.js";
import { RunEventWriter } from "./run-event-writer.js";

/** One gateway node's event half, for the bus tests: its PostgresStore, run-event writer and bus, as the runtime wires them. */
export interface BusNode {
  bus: PgEventBus;
  writer: RunEventWriter;
  notifier: PgNotifier;
  store: PostgresStore;
  close(): Promise<void>;
}

export async function openBusNode(
  options: PostgresOptions,
  notifier: PostgresStoreOptions["notifier"] = { reconnect: { baseMs: 20, maxMs: 200 } },
): Promise<BusNode> {
  const store = await openPostgresStore({ ...options, poolMax: 4, notifier });
  const writer = new RunEventWriter({
    store,
    clock: systemClock,
    logger: silentLogger,
    flushDelayMs: 5,
    isTransientStoreError: isTransientPostgresError,
  });
  const bus = new PgEventBus({ source: store, store, beforeEndNotice: () => writer.written() });
  writer.attach(bus);
  await bus.ready();
  return {
    bus,
    writer,
    notifier: await store.notifier(),
    store,
    async close() {
      await writer.close();
      bus.close();
      await store.close();
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
  // the end notices of runs ended so far go out after their flush: before the marker, so it comes after them
  for (const n of nodes) await n.bus.idle();
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
  await notify(nodes[0].store.pool, nodes[0].store.channel, { k: "sync", id });
  await Promise.all(heard);
  for (const n of nodes) await n.bus.idle();
  // a read can end with an end notice still to come (announced after a flush): wait for those too
  for (const n of nodes) await n.bus.idle();
}

/** Two nodes on a fresh schema: `bus` emits on node A, `peer` listens on node B. */
export async function openTwoNodeBus(url: string): Promise<BusUnderTest & { nodes: BusNode[] }> {
  const ts = await createTestSchema(url);
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
