/**
 * One operation at a time per key, in call order. Used where a session's steps must not interleave in this process:
 * intake stores a session's messages in the order they came (queue/intake.ts), and the cluster's steps for one
 * session (route an input, adopt, give the lease back, take a lock) each see the ownership the one before left.
 * Different keys run independently. Keys with nothing pending are forgotten.
 */
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const mine = before.then(fn);
    const tail = mine.then(
      () => {},
      () => {},
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return mine;
  }

  /** Resolves once every operation queued so far has settled (tests, drain). */
  async idle(): Promise<void> {
    while (this.tails.size > 0) await Promise.all([...this.tails.values()]);
  }
}
