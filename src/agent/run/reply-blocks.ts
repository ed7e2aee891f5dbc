import type { Clock } from "../../infra/clock.js";
import type { BlockStreamingBreak } from "../../protocol/agent-events.js";
import { isSilentReply, stripTrailingSilentToken } from "../reply.js";
import { silentTokenTail } from "../silent-prefix.js";
import { type Block, BlockChunker } from "./block-chunker.js";
import type { RunEmitter } from "./events.js";

/**
 * Block streaming for one run (SPEC 7): feeds each assistant message's text to the chunker and sends its blocks as
 * `block` events.
 *
 * - `text_end`: a block goes out as soon as the streamed text holds one (more than 1,200 chars wait), text that
 *   stands idle for a second goes out however short, and the rest goes out when the message ends. A message's text
 *   ends with the message (the loop has no finer "text block ended" signal).
 * - `message_end`: nothing goes out while the message streams; its blocks all go out when it is complete. No idle
 *   blocks: a message that is not complete may still be thrown away.
 *
 * An attempt that is thrown away (retry, compaction, fallback) resets the chunker. Blocks already sent cannot be
 * unsent: in `text_end` the next block says `replace` (the blocks since the last complete message are void), the
 * same rule as the `assistant` stream's `replace`. In `message_end` blocks come only from complete messages, which
 * stay valid, so there is nothing to take back.
 *
 * The silent token: a message that is exactly `NO_REPLY` sends no block; a trailing token is not sent; an idle block
 * keeps back an end that could still become the token.
 */
export class ReplyBlocks {
  private readonly chunker = new BlockChunker({ holdBack: silentTokenTail });
  private index = 0;
  /** blocks went out for the message now streaming */
  private sentForMessage = false;
  /** a message is streaming (deltas came since the last complete message or discard) */
  private inMessage = false;
  private replaceNext = false;
  /** the message text the current message's blocks carried */
  private bodies = "";
  /** what the blocks of the last complete message carried: the final reply does not repeat it */
  private settled = "";
  private timer: unknown;
  private closed = false;

  constructor(
    private readonly mode: BlockStreamingBreak,
    private readonly events: RunEmitter,
    private readonly clock: Clock,
  ) {}

  onDelta(delta: string): void {
    if (this.closed) return;
    this.inMessage = true;
    const now = this.clock.now();
    if (this.mode === "message_end") {
      this.chunker.append(delta, now);
      return;
    }
    this.send(this.chunker.push(delta, now));
    this.armIdle();
  }

  /** A complete assistant message: what its blocks did not carry yet goes out. */
  onMessageEnd(text: string): void {
    if (this.closed) return;
    this.disarm();
    if (isSilentReply(text)) this.chunker.reset();
    else this.chunker.dropTail(text.length - stripTrailingSilentToken(text).length);
    this.send(this.chunker.end());
    this.settled = this.bodies;
    this.bodies = "";
    this.sentForMessage = false;
    this.inMessage = false;
  }

  /** The attempt is thrown away: what waits is dropped; blocks it sent are void (text_end). */
  discard(): void {
    this.disarm();
    this.chunker.reset();
    if (this.sentForMessage) this.replaceNext = true;
    this.sentForMessage = false;
    this.inMessage = false;
    this.bodies = "";
  }

  /**
   * What blocks delivered of the reply's text (without synthetic fence lines): the last complete message's, or of
   * the message the run ended in (a failed call's partial answer, which the final reply also carries).
   */
  delivered(): string {
    return this.inMessage ? this.bodies : this.settled;
  }

  /** The run is over: no idle block may follow its end. */
  close(): void {
    this.closed = true;
    this.disarm();
  }

  private send(blocks: Block[]): void {
    for (const b of blocks) {
      this.events.emit("block", { index: this.index++, text: b.text, ...(this.replaceNext ? { replace: true } : {}) });
      this.replaceNext = false;
      this.sentForMessage = true;
      this.bodies += b.body;
    }
  }

  /** One timer per idle period: it fires at the idle time of the last delta, or re-arms when a delta came since. */
  private armIdle(): void {
    if (this.timer !== undefined) return;
    const at = this.chunker.idleAt();
    if (at === undefined) return;
    this.timer = this.clock.setTimeout(() => this.onIdleTimer(), Math.max(0, at - this.clock.now()));
  }

  private onIdleTimer(): void {
    this.timer = undefined;
    if (this.closed) return;
    this.send(this.chunker.idle(this.clock.now()));
    this.armIdle();
  }

  private disarm(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
