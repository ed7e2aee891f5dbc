/**
 * When an `assistant` event carries the message's cumulative `text` (the policy is described on `AssistantData` in
 * protocol/agent-events.ts). Sending it on every delta made a reply of n characters cost O(n²) wire bytes per
 * subscriber; checkpoints spaced by a fixed fraction of the length keep the total under a constant times n, while a
 * client that joins mid-stream still gets the whole text soon (within a quarter of what was already said).
 */

/** the smallest growth between two checkpoints, in characters */
export const TEXT_CHECKPOINT_MIN_CHARS = 512;
/** otherwise a checkpoint follows once the message has grown by this share of its length at the last one */
export const TEXT_CHECKPOINT_GROWTH = 0.25;

export class TextCheckpoints {
  /** length of the text at the last checkpoint; undefined before the first delta of a message */
  private last: number | undefined;

  /** `growth`: the share of its length the text must grow by before the next checkpoint (see the file comment) */
  constructor(private readonly growth = TEXT_CHECKPOINT_GROWTH) {}

  /** Whether the delta that brought the message to `length` characters carries `text`. */
  carry(length: number): boolean {
    const last = this.last;
    if (last !== undefined && length - last < Math.max(TEXT_CHECKPOINT_MIN_CHARS, last * this.growth)) {
      return false;
    }
    this.last = length;
    return true;
  }

  /** A new assistant message starts (or the answer restarts): its first delta is a checkpoint. */
  reset(): void {
    this.last = undefined;
  }
}
