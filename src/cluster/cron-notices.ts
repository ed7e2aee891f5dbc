import { randomUUID } from "node:crypto";
import type { PgBusSource } from "../events/pg-bus.js";
import { type NotifyPointer, notify } from "../storage/postgres/notifier.js";

/**
 * Cron jobs across gateway nodes on one Postgres: a `cron.add`, `cron.remove` or `cron.update` stores the change on
 * the node that got it, which then announces `{k: "cron", node}`; every other node re-reads the stored jobs, so the
 * cron leader schedules a job added on any node at once (before issue 33 it waited for the leader's next start).
 * After a LISTEN reconnect every node re-reads too: a notice sent in the gap is lost.
 */
export class CronNotices {
  /** tells this node's announcements apart from the others' (every node hears the whole channel) */
  private readonly node = randomUUID();
  private readonly offs: Array<() => void> = [];

  private constructor(
    private readonly source: PgBusSource,
    private readonly onError: (err: Error) => void,
  ) {}

  static async start(source: PgBusSource, onChange: () => void, onError: (err: Error) => void): Promise<CronNotices> {
    const notices = new CronNotices(source, onError);
    const notifier = await source.notifier();
    notices.offs.push(
      notifier.subscribe((p: NotifyPointer) => {
        if (p.k === "cron" && p.node !== notices.node) onChange();
      }),
      notifier.onReconnect(onChange),
    );
    return notices;
  }

  /** The stored jobs changed here. */
  announce(): void {
    notify(this.source.pool, this.source.channel, { k: "cron", node: this.node }).catch((err: Error) =>
      this.onError(new Error(`cron change not announced to the other nodes: ${err.message}`)),
    );
  }

  close(): void {
    for (const off of this.offs.splice(0)) off();
  }
}
