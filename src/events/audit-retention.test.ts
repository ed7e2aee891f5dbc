import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../config/load.js";
import { startGateway } from "../gateway/server.js";
import { silentLogger } from "../infra/logger.js";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import type { AuditEventInput } from "../storage/types.js";
import { ManualClock } from "../testing/manual-clock.js";
import { AUDIT_PRUNE_INTERVAL_MS, startAuditPruning } from "./audit-retention.js";

const DAY = 86_400_000;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function dbFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-audit-prune-"));
  dirs.push(dir);
  return path.join(dir, "loopgate.sqlite");
}

function row(eventId: string, occurredAt: number): AuditEventInput {
  return {
    eventId,
    sourceSequence: 1,
    occurredAt,
    actor: "cli",
    action: "agent.run.started",
    status: "started",
    sessionKey: "agent:main:main",
    runId: eventId,
    schemaVersion: 1,
    redaction: "metadata_only",
  };
}

const ids = (store: SqliteStore) =>
  store
    .listAuditEvents({ limit: 1000 })
    .map((r) => r.eventId)
    .sort();

describe("audit ledger retention", () => {
  it("a gateway start drops audit rows older than audit.retentionDays and keeps the recent ones", async () => {
    const file = dbFile();
    const now = Date.now();
    const seed = new SqliteStore(file);
    seed.appendAuditEvents([row("ten-days", now - 10 * DAY), row("two-days", now - 2 * DAY), row("today", now)]);
    seed.close();

    const gw = await startGateway({
      config: parseConfig({ audit: { retentionDays: 3 } }),
      stateDir: path.dirname(file),
      port: 0,
      logger: silentLogger,
    });
    await gw.close();
    const store = new SqliteStore(file);
    expect(ids(store)).toEqual(["today", "two-days"]);
    store.close();
  });

  it("audit.maxRows keeps only the newest rows, and the pass runs again every hour until stopped", () => {
    const store = new SqliteStore(dbFile());
    const clock = new ManualClock(100 * DAY);
    const start = clock.now();
    store.appendAuditEvents(["a", "b", "c", "d"].map((id, i) => row(id, start - (4 - i) * 1000)));
    const pruning = startAuditPruning({
      store: new SqliteStoreAdapter(store),
      limits: { retentionDays: 30, maxRows: 2 },
      clock,
      logger: silentLogger,
    });
    expect(ids(store)).toEqual(["c", "d"]);

    store.appendAuditEvents([row("e", start + 1)]);
    clock.advance(AUDIT_PRUNE_INTERVAL_MS - 1);
    expect(ids(store)).toEqual(["c", "d", "e"]);
    clock.advance(1);
    expect(ids(store)).toEqual(["d", "e"]);

    pruning.stop();
    store.appendAuditEvents([row("f", start + 2)]);
    clock.advance(AUDIT_PRUNE_INTERVAL_MS);
    expect(ids(store)).toEqual(["d", "e", "f"]);
    store.close();
  });
});
