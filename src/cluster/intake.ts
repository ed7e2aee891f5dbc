import type pg from "pg";
import type { AdoptedRun } from "../queue/types.js";
import { notify } from "../storage/postgres/notifier.js";
import {
  type AdoptedInput,
  adoptInputs,
  hasUnadoptedInputs,
  readQueuedInputs,
} from "../storage/postgres/queue-adopt.js";
import type { SessionLease } from "../storage/postgres/session-leases.js";
import type { SessionOwnership } from "./ownership.js";
import { type ClusterLogger, type LocalQueue, POINTER_INPUT } from "./types.js";

/**
 * Intake routing across nodes. Any node accepts any message: the input is committed (queued, adopted by nobody)
 * before the answer, as on one node. Then it goes where its session runs:
 * - this node owns the session (or takes its free lease): it adopts the session's queued inputs, in acceptance
 *   order, into its local queue (this input among them);
 * - another node owns it: NOTIFY `{k: "in", sessionKey}`; the owner adopts it into ITS local queue, where queue modes
 *   apply as if it arrived there. A lost notification is covered twice: the owner re-checks after giving the lease
 *   back, and every node's sweeper adopts sessions with queued inputs and no live lease.
 */
export class ClusterIntake {
  constructor(
    private readonly pool: pg.Pool,
    private readonly channel: string,
    private readonly own: SessionOwnership,
    private readonly queue: LocalQueue,
    private readonly log: ClusterLogger,
  ) {}

  /** The input is stored: adopt it here, or tell the owner. Never rejects (an unrouted input is the sweeper's). */
  routeStored(sessionKey: string): Promise<void> {
    return this.own.serial
      .run(sessionKey, async () => {
        if (await this.claimHere(sessionKey)) return;
        await notify(this.pool, this.channel, { k: POINTER_INPUT, sessionKey });
      })
      .catch((err: Error) => this.report("routing a stored input", sessionKey, err));
  }

  /**
   * The local queue is done with the session. Its lease is kept until the node's next beat (`releaseIdle`): a
   * session's next message, often right behind its last reply, finds it owned, with no acquire, release and re-check
   * per turn (three statements, two of them commits). Messages stored on other nodes meanwhile are announced to this
   * node and adopted here, as while it is busy.
   */
  sessionIdle(sessionKey: string): void {
    if (this.own.owns(sessionKey)) return;
    void this.own.serial
      .run(sessionKey, async () => this.own.forgetLost(sessionKey))
      .catch((err: Error) => this.report("forgetting a lost session", sessionKey, err));
  }

  /**
   * The beat's part: every lease nothing here needs any more goes back, then a late input (if any) is taken again.
   * Returns the sessions given back.
   */
  async releaseIdle(): Promise<string[]> {
    const released: string[] = [];
    await Promise.all(
      this.own.ownedKeys().map((sessionKey) =>
        this.own.serial
          .run(sessionKey, async () => {
            if (!(await this.own.releaseIfIdle(sessionKey))) return;
            released.push(sessionKey);
            // An input stored on another node while the lease was ours was announced to us; if it came in after our
            // last adoption it is still unadopted: take the session again rather than leave it to the sweeper.
            if (await hasUnadoptedInputs(this.pool, sessionKey)) await this.claimHere(sessionKey);
          })
          .catch((err: Error) => this.report("giving the session back", sessionKey, err)),
      ),
    );
    return released;
  }

  /** A pointer for an input: the owner adopts it. Nodes that do not own the session leave it. */
  onInputPointer(sessionKey: string): void {
    if (!this.own.owns(sessionKey)) return;
    void this.own.serial
      .run(sessionKey, async () => {
        const lease = this.own.lease(sessionKey);
        if (lease) await this.adoptUnder(lease);
      })
      .catch((err: Error) => this.report("adopting an announced input", sessionKey, err));
  }

  /**
   * Takes the session (held lease, or a free one) and adopts its queued inputs; false when another node holds it, or
   * this node is draining (it takes nothing new). Call inside the session's `serial`.
   */
  async claimHere(sessionKey: string): Promise<boolean> {
    if (this.queue.draining) return false;
    const lease = await this.own.take(sessionKey);
    if (!lease) return false;
    await this.adoptUnder(lease);
    return true;
  }

  /**
   * Adopts under `lease`; with nothing to run here after all (or draining), the lease goes straight back. The
   * inputs are read, handed to the local queue, and then adopted in one write, but for one whose turn started at
   * once: its `running` write adopts it (`PostgresStore.setRunNode`), so it costs no commit of its own.
   */
  async adoptUnder(lease: SessionLease): Promise<number> {
    // a draining node takes nothing new (what it adopted would only go back at its hand-off)
    if (this.queue.draining) {
      if (!this.queue.hasWork(lease.sessionKey)) await this.own.releaseIfIdle(lease.sessionKey);
      return 0;
    }
    const session = { key: lease.sessionKey, token: lease.token };
    const rows = await readQueuedInputs(this.pool, { nodeId: this.own.nodeId, session });
    const joined = rows.length > 0 ? this.queue.adopt(rows.map(toAdoptedRun)) : 0;
    const waiting = rows.filter((r) => !this.queue.launched(r.runId)).map((r) => r.runId);
    await adoptInputs(this.pool, { nodeId: this.own.nodeId, session, runIds: waiting });
    if (!this.queue.hasWork(lease.sessionKey)) await this.own.releaseIfIdle(lease.sessionKey);
    return joined;
  }

  private report(what: string, sessionKey: string, err: Error): void {
    this.log.warn(`cluster: ${what} failed; the sweeper retries`, { sessionKey, error: err?.message ?? String(err) });
  }
}

export function toAdoptedRun(row: AdoptedInput): AdoptedRun {
  return {
    runId: row.runId,
    sessionKey: row.sessionKey,
    acceptedAt: row.acceptedAt,
    params: JSON.parse(row.params) as Record<string, unknown>,
    ...(row.sessionQueueMode ? { sessionQueueMode: row.sessionQueueMode } : {}),
    lastEventSeq: row.lastEventSeq,
    ...(row.receipt ? { storedReceipt: row.receipt } : {}),
    ...(row.session ? { session: row.session } : {}),
  };
}
