/**
 * Spend notices across gateway nodes on one Postgres (SPEC 25): each model call (who spent, how much, when), each
 * run a token started and each end go out as a small NOTIFY on the store's channel; the other nodes add them to
 * their window sums and rate-limit counters at once. A notice lost while a LISTEN connection was down is made good
 * by the next sync of the window sums from the ledger (limits.syncIntervalMs); a lost run notice only until the
 * minute or the run is over. Pointer keys are short and never `runId` / `sessionKey`, which the event bus and the
 * session relay read on the same channel.
 *
 * Model-call notices are gathered for up to GATHER_MS and sent in one statement: a turn makes a model call or more,
 * each notice on its own would be a commit (a WAL flush) per call, and the other nodes' sums can be that much late.
 * Run notices (a token's run started or ended: concurrency caps) go at once.
 */
import { randomUUID } from "node:crypto";
import type { PgBusSource } from "../events/pg-bus.js";
import type { Clock } from "../infra/clock.js";
import type { NotifyPointer, notifyAll as notifyAllFn } from "../storage/postgres/notifier.js";
import type { SpendControl, SpendNotice } from "./spend-control.js";

const KIND = "spend";
/** how long a model call's notice may wait for others to share its statement */
export const GATHER_MS = 50;

export class PgSpendRelay {
  private readonly node = randomUUID();
  private off: (() => void) | undefined;
  private sending: Promise<void> = Promise.resolve();
  private closed = false;
  private gathered: NotifyPointer[] = [];
  private timer: unknown;

  private constructor(
    private readonly source: PgBusSource,
    private readonly notifyAll: typeof notifyAllFn,
    private readonly onError: (err: Error) => void,
    private readonly clock: Clock,
  ) {}

  static async start(
    source: PgBusSource,
    spend: SpendControl,
    onError: (err: Error) => void,
    clock: Clock,
  ): Promise<PgSpendRelay> {
    const { notifyAll } = await import("../storage/postgres/notifier.js");
    const relay = new PgSpendRelay(source, notifyAll, onError, clock);
    const hear = spend.connectRelay((n) => relay.announce(n));
    const notifier = await source.notifier();
    relay.off = notifier.subscribe((p) => {
      if (relay.closed || p.k !== KIND || p.node === relay.node) return;
      const notice = fromPointer(p);
      if (notice) hear(notice);
    });
    return relay;
  }

  /** Resolves once every notice announced so far has been sent (or failed); gathered ones are sent now. */
  flushed(): Promise<void> {
    this.send();
    return this.sending;
  }

  /** Stops hearing the other nodes; what was gathered is still sent. */
  close(): void {
    this.send();
    this.closed = true;
    this.off?.();
  }

  private announce(n: SpendNotice): void {
    if (this.closed) return;
    this.gathered.push(toPointer(n, this.node));
    if (n.type !== "call") this.send();
    else this.timer ??= this.clock.setTimeout(() => this.send(), GATHER_MS);
  }

  private send(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    if (this.gathered.length === 0) return;
    const pointers = this.gathered;
    this.gathered = [];
    const { pool, channel } = this.source;
    this.sending = this.sending
      .then(() => this.notifyAll(pool, channel, pointers))
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
