/** Collect mode (SPEC 2): the messages queued behind a run become one turn that lists each of them. */

export const COLLECT_HEADER = "[Queued messages while agent was busy]";

/** The one turn a batch of collected messages becomes. */
export function collectPrompt(texts: string[]): string {
  const blocks = texts.map((t, i) => `---\nQueued #${i + 1}\n${t}`);
  return `${COLLECT_HEADER}\n\n${blocks.join("\n\n")}`;
}

/**
 * Takes every other collect-mode message out of `pending` (in order) to join `first`; followups stay where they
 * are. Returns the whole batch, `first` included.
 */
export function takeCollectBatch<T extends { mode: string }>(first: T, pending: T[]): T[] {
  const batch = [first];
  for (let i = 0; i < pending.length; ) {
    if (pending[i].mode === "collect") batch.push(...pending.splice(i, 1));
    else i++;
  }
  return batch;
}
