import type { Clock } from "../infra/clock.js";
import type { RunRecord, Store } from "../storage/types.js";

/** How often ends the store refused are offered to it again while any are kept. */
export const UNRECORDED_RETRY_MS = 5_000;

type RunPatch = Partial<Omit<RunRecord, "runId" | "sessionKey" | "acceptedAt">>;

/**
 * Terminal states the store could not take (the disk is full), kept in memory until it can.
 *
 * The client was already told how its run ended (`error: storage full`); a record left `queued` or `running` would
 * say otherwise once space is back (`agent.wait` → pending) and the next start would run it again. Why memory and
 * not a write at the moment: on a full disk there is no write to make. So the end is held here, read in place of
 * the record by `agent.wait` and `final`, and written by the first of: the retry timer (every UNRECORDED_RETRY_MS
 * while any is kept, so space coming back is noticed without a client asking), the drain at shutdown, and the
 * start-up recovery of this process. A process that dies while the disk is still full loses what is kept here:
 * nothing could have been stored then, and its restart's recovery treats the record as it finds it.
 */
export class UnrecordedEnds {
  private readonly ends = new Map<string, RunPatch>();
  private timer: unknown;
  private flushing?: Promise<void>;
  private stopped = false;

  constructor(
    private readonly deps: {
      store: Pick<Store, "updateRuns">;
      clock: Clock;
      warn: (message: string) => void;
      retryMs?: number;
    },
  ) {}

  get size(): number {
    return this.ends.size;
  }

  /** Holds the ends the store refused and arms the retry. */
  keep(patches: ReadonlyArray<{ runId: string; patch: RunPatch }>): void {
    for (const { runId, patch } of patches) this.ends.set(runId, patch);
    this.arm();
  }

  /** The record as it will be once the kept end is written (the record itself when nothing is kept for it). */
  overlay(run: RunRecord): RunRecord;
  overlay(run: RunRecord | undefined): RunRecord | undefined;
  overlay(run: RunRecord | undefined): RunRecord | undefined {
    const patch = run && this.ends.get(run.runId);
    return patch ? { ...run, ...patch } : run;
  }

  has(runId: string): boolean {
    return this.ends.has(runId);
  }

  /** Writes every kept end in one commit; on failure they stay kept (and the retry stays armed). One at a time. */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /** No more retries (shutdown); what is kept stays readable. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.deps.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async write(): Promise<void> {
    if (this.ends.size === 0) return;
    const batch = [...this.ends].map(([runId, patch]) => ({ runId, patch }));
    try {
      await this.deps.store.updateRuns(batch);
    } catch (err) {
      this.deps.warn(
        `${batch.length} run end(s) still cannot be recorded, kept in memory: ${(err as Error)?.message ?? String(err)}`,
      );
      this.arm();
      return;
    }
    // an end kept again meanwhile (a newer patch for the same run) waits for the next flush
    for (const { runId, patch } of batch) if (this.ends.get(runId) === patch) this.ends.delete(runId);
    if (this.ends.size > 0) this.arm();
  }

  private arm(): void {
    if (this.stopped || this.timer !== undefined) return;
    this.timer = this.deps.clock.setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.deps.retryMs ?? UNRECORDED_RETRY_MS);
  }
}
