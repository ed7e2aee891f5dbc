/**
 * Spend notices across gateway nodes on one Postgres (SPEC 25): each model call (who spent, how much, when), each
 * run a token started and each end go out as a small NOTIFY on the store's channel; the other nodes add them to
 * their window sums and rate-limit counters at once. A notice lost while a LISTEN connection was down is made good
 * by the next sync of the window sums from the ledger (limits.syncIntervalMs); a lost run notice only until the
 * minute or the run is over. Pointer keys are short and never `runId` / `sessionKey`, which the event bus and the
 * session relay read on the same channel.
 */
import { randomUUID } from "node:crypto";
import type { PgBusSource } from "../events/pg-bus.js";
import type { NotifyPointer, notify as notifyFn } from "../storage/postgres/notifier.js";
import type { SpendControl, SpendNotice } from "./spend-control.js";

const KIND = "spend";

export class PgSpendRelay {
  private readonly node = randomUUID();
  private off: (() => void) | undefined;
  private sending: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly source: PgBusSource,
    private readonly notify: typeof notifyFn,
    private readonly onError: (err: Error) => void,
  ) {}

  static async start(source: PgBusSource, spend: SpendControl, onError: (err: Error) => void): Promise<PgSpendRelay> {
    const { notify } = await import("../storage/postgres/notifier.js");
    const relay = new PgSpendRelay(source, notify, onError);
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
  flushed(): Promise<void> {
    return this.sending;
  }

  close(): void {
    this.closed = true;
    this.off?.();
  }

  private announce(n: SpendNotice): void {
    if (this.closed) return;
    const pointer = toPointer(n, this.node);
    const { pool, channel } = this.source;
    this.sending = this.sending
      .then(() => this.notify(pool, channel, pointer))
      .catch((err: Error) => this.onError(new Error(`spend notice not announced: ${err.message}`)));
  }
}

function toPointer(n: SpendNotice, node: string): NotifyPointer {
  const base = { k: KIND, node, t: n.type };
  if (n.type === "call") {
    const c = n.call;
    return {
      ...base,
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
