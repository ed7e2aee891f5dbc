/**
 * Spend notices across gateway nodes on one Postgres (SPEC 25): each model call (who spent, how much, when), each
 * run a token started and each end go out as a small NOTIFY on the store's channel; the other nodes add them to
 * their window sums and rate-limit counters at once. A notice lost while a LISTEN connection was down is made good
 * by the next sync of the window sums from the ledger (limits.syncIntervalMs); a lost run notice only until the
 * minute or the run is over. Pointer keys are short and never `runId` / `sessionKey`, which the event bus and the
 * session relay read on the same channel.
 *
 * A call's notice rides its cost row (`costRows`, the Postgres store): it goes out in the statement that stores the
 * row, so at the commit of the run-event batch that carried it (events/run-event-writer.ts, within the writer's 50 ms)
 * or of the cost ledger's own write, and costs no commit of its own. Another node hears of the spend when the row it
 * could read is committed: up to that delay later than the call, so a node may admit a model call up to that much
 * spend late (docs/architecture.md, spend control across nodes). A row the ledger dropped (full queue, refused write) is not announced either;
 * the window sums' sync from the ledger is what it always was for lost notices.
 *
 * A run's notices (token runs started and ended) go at once; those that come while one is being sent are gathered
 * and go together in the next statement.
 */
import { randomUUID } from "node:crypto";
import type { PgBusSource } from "../events/pg-bus.js";
import type { NotifyPointer, notifyAll as notifyAllFn } from "../storage/postgres/notifier.js";
import type { CostRow } from "../storage/types.js";
import type { SpendControl, SpendNotice } from "./spend-control.js";

const KIND = "spend";

/** Where a call's notice rides its cost row's write (the Postgres store's `announceCostRows`). */
export interface CostRowNotices {
  announceCostRows(notice: ((row: CostRow) => NotifyPointer) | undefined): void;
}

export class PgSpendRelay {
  private readonly node = randomUUID();
  private off: (() => void) | undefined;
  private sending: Promise<void> = Promise.resolve();
  private closed = false;
  private gathered: NotifyPointer[] = [];
  private inFlight = false;

  private constructor(
    private readonly source: PgBusSource,
    private readonly notifyAll: typeof notifyAllFn,
    private readonly onError: (err: Error) => void,
    private readonly costRows: CostRowNotices | undefined,
  ) {}

  static async start(
    source: PgBusSource,
    spend: SpendControl,
    onError: (err: Error) => void,
    costRows?: CostRowNotices,
  ): Promise<PgSpendRelay> {
    const { notifyAll } = await import("../storage/postgres/notifier.js");
    const relay = new PgSpendRelay(source, notifyAll, onError, costRows);
    costRows?.announceCostRows((row) => toPointer({ type: "call", call: row }, relay.node));
    const hear = spend.connectRelay((n) => relay.announce(n));
    const notifier = await source.notifier();
    relay.off = notifier.subscribe((p) => {
      if (relay.closed || p.k !== KIND || p.node === relay.node) return;
      const notice = fromPointer(p);
      if (notice) hear(notice);
    });
    return relay;
  }

  /** Resolves once every notice announced so far has been sent (or failed). */
  async flushed(): Promise<void> {
    while (this.inFlight || this.gathered.length > 0) await this.sending;
  }

  close(): void {
    this.closed = true;
    this.off?.();
    // the store keeps announcing cost rows: those the ledger writes at close still tell the other nodes
  }

  private announce(n: SpendNotice): void {
    // a call's notice goes out with its cost row
    if (this.closed || (n.type === "call" && this.costRows)) return;
    this.gathered.push(toPointer(n, this.node));
    if (!this.inFlight) this.sending = this.sendGathered();
  }

  /** Sends what is gathered, then what was gathered meanwhile, until nothing is left; one statement each time. */
  private async sendGathered(): Promise<void> {
    this.inFlight = true;
    const { pool, channel } = this.source;
    try {
      while (this.gathered.length > 0) {
        const pointers = this.gathered;
        this.gathered = [];
        await this.notifyAll(pool, channel, pointers).catch((err: Error) =>
          this.onError(new Error(`spend notice not announced: ${err.message}`)),
        );
      }
    } finally {
      this.inFlight = false;
    }
  }
}

function toPointer(n: SpendNotice, node: string): NotifyPointer {
  const base = { k: KIND, node, t: n.type };
  if (n.type === "call") {
    const c = n.call;
    return {
      ...base,
      // the cost row's id: a node that read the row already skips the notice (limits/window-sums.ts)
      i: c.id ?? null,
      a: c.agentId,
      s: c.sessionKey,
      tk: c.token ?? null,
      ts: c.ts,
      n: c.totalTokens,
      u: c.costUsd ?? null,
    };
  }
  if (n.type === "accepted") return { ...base, tk: n.token, r: n.runId, ts: n.at };
  return { ...base, r: n.runId };
}

function fromPointer(p: NotifyPointer): SpendNotice | undefined {
  if (p.t === "call" && typeof p.a === "string" && typeof p.s === "string" && typeof p.ts === "number") {
    return {
      type: "call",
      call: {
        ...(typeof p.i === "string" ? { id: p.i } : {}),
        agentId: p.a,
        sessionKey: p.s,
        ...(typeof p.tk === "string" ? { token: p.tk } : {}),
        ts: p.ts,
        totalTokens: typeof p.n === "number" ? p.n : 0,
        ...(typeof p.u === "number" ? { costUsd: p.u } : {}),
      },
    };
  }
  if (p.t === "accepted" && typeof p.tk === "string" && typeof p.r === "string" && typeof p.ts === "number") {
    return { type: "accepted", token: p.tk, runId: p.r, at: p.ts };
  }
  if (p.t === "ended" && typeof p.r === "string") return { type: "ended", runId: p.r };
  return undefined;
}
