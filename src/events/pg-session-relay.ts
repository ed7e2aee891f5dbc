/**
 * Session notices across gateway nodes on one Postgres: what one node's SessionEvents publish (a session created,
 * reset, deleted or patched; a transcript message appended) reaches the clients of every node (`sessions.changed`,
 * `session.message`).
 *
 * A local notice is announced as a pointer after the change is stored (SessionEvents are emitted after the write):
 * `{k: "sc", sessionKey, reason, node}` on the store's channel (every node's clients may list sessions), `{k: "sm",
 * sessionKey, generation, seq, node}` on the session's channel, which a node listens to only while its clients follow
 * the session (the broadcaster's session watch); with `messagePointers` (the Postgres store) the `sm` pointers go out
 * in the transcript's INSERT statement instead.
 * Another node re-emits it into its own SessionEvents marked `remote`, so this relay does not announce it again. A
 * message is read back from the transcript (rows can be large; pointers stay small), and only when a client of that
 * node follows the session's messages (`wantsMessages`); nothing is read otherwise.
 *
 * Announcements go out one after another, so one node's notices reach the others in the order they happened. A
 * notice lost while a LISTEN connection was down is not replayed: `sessions.changed` is a hint to re-read, and the
 * next one (or the client's own `sessions.list`) brings the reader up to date.
 */
import { randomUUID } from "node:crypto";
import type { SessionEvent, SessionEvents } from "../infra/session-events.js";
// types only at load: start() loads the driver, so the gateway's SQLite path never does
import type {
  NotifyPointer,
  notify as notifyFn,
  PgNotifier,
  sessionChannel as sessionChannelFn,
} from "../storage/postgres/notifier.js";
import type { Store } from "../storage/types.js";
import type { PgBusSource } from "./pg-bus.js";

const REASONS = new Set(["created", "reset", "deleted", "patched"]);

export interface PgSessionRelayOptions {
  source: PgBusSource;
  events: SessionEvents;
  store: Pick<Store, "readTranscript">;
  /**
   * The store, when it can announce transcript messages in the statement that appends them (PostgresStore): then this
   * relay announces session changes only, and a message costs no NOTIFY transaction of its own.
   */
  messagePointers?: { announceMessages(node: string | undefined): void };
  /** whether a client of this node follows the session's messages (the broadcaster knows) */
  wantsMessages: (sessionKey: string) => boolean;
  onError?: (err: Error) => void;
}

export class PgSessionRelay {
  /** tells this node's own announcements apart from the other nodes' (every node hears the whole channel) */
  private readonly node = randomUUID();
  private readonly offs: Array<() => void> = [];
  private sending: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly opts: PgSessionRelayOptions,
    notifier: PgNotifier,
    private readonly notify: typeof notifyFn,
    private readonly sessionChannel: typeof sessionChannelFn,
  ) {
    this.offs.push(
      opts.events.subscribe((ev) => this.announce(ev)),
      notifier.subscribe((p) => this.onPointer(p)),
    );
    opts.messagePointers?.announceMessages(this.node);
  }

  static async start(opts: PgSessionRelayOptions): Promise<PgSessionRelay> {
    const { notify, sessionChannel } = await import("../storage/postgres/notifier.js");
    return new PgSessionRelay(opts, await opts.source.notifier(), notify, sessionChannel);
  }

  /** Resolves once every notice announced so far has been sent (or failed). */
  flushed(): Promise<void> {
    return this.sending;
  }

  close(): void {
    this.closed = true;
    this.opts.messagePointers?.announceMessages(undefined);
    for (const off of this.offs.splice(0)) off();
  }

  private announce(ev: SessionEvent): void {
    if (ev.remote || this.closed || (ev.type === "message" && this.opts.messagePointers)) return;
    const pointer: NotifyPointer =
      ev.type === "changed"
        ? { k: "sc", sessionKey: ev.sessionKey, reason: ev.reason, node: this.node }
        : { k: "sm", sessionKey: ev.sessionKey, generation: ev.row.generation, seq: ev.row.seq, node: this.node };
    const { pool, channel } = this.opts.source;
    const to = ev.type === "changed" ? channel : this.sessionChannel(channel, ev.sessionKey);
    this.sending = this.sending
      .then(() => this.notify(pool, to, pointer))
      .catch((err: Error) => this.opts.onError?.(new Error(`session notice not announced: ${err.message}`)));
  }

  private onPointer(p: NotifyPointer): void {
    if (this.closed || p.node === this.node || typeof p.sessionKey !== "string") return;
    const sessionKey = p.sessionKey;
    if (p.k === "sc" && typeof p.reason === "string" && REASONS.has(p.reason)) {
      const reason = p.reason as "created" | "reset" | "deleted" | "patched";
      this.opts.events.emit({ type: "changed", sessionKey, reason, remote: true });
      return;
    }
    if (p.k !== "sm" || typeof p.generation !== "number" || typeof p.seq !== "number") return;
    if (!this.opts.wantsMessages(sessionKey)) return;
    const { generation, seq } = p;
    this.opts.store
      .readTranscript(sessionKey, { generation, afterSeq: seq - 1, limit: 1 })
      .then((rows) => {
        const row = rows[0];
        if (row && row.seq === seq && !this.closed)
          this.opts.events.emit({ type: "message", sessionKey, row, remote: true });
      })
      .catch((err: Error) => this.opts.onError?.(new Error(`session message ${sessionKey}#${seq}: ${err.message}`)));
  }
}
