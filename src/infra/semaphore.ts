/**
 * At most `size` holders at once; the others wait in arrival order. For work that is expensive in memory or in
 * threads of libuv's pool (image decoding), where running everything at once costs more than running it in turn.
 */
export class Semaphore {
  private held = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly size: number) {}

  /** holders now, and callers still waiting (for figures) */
  get load(): { held: number; waiting: number } {
    return { held: this.held, waiting: this.waiting.length };
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    await this.acquire();
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  private acquire(): Promise<void> {
    if (this.held < this.size) {
      this.held++;
      return Promise.resolve();
    }
    // the slot is handed over by release(): held stays the same
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held--;
  }
}
