/**
 * A database that cannot be written (the disk is full, the device fails) is a state the gateway lives through:
 * the store notes the fault, new input is refused as retryable, and a probe write clears the fault once space is
 * back. Nothing here knows about the gateway; the store owns one monitor and the queue and `health` read it.
 */

/** What `health` reports while writes fail. */
export interface StorageFault {
  reason: "storage full";
  /** the SQLite error code that put the store in this state (SQLITE_FULL, SQLITE_IOERR_WRITE, ...) */
  code: string;
  stateDir: string;
  since: number;
}

/** SQLITE_FULL, and SQLITE_IOERR with any extended code: a write that cannot reach the disk. */
export function isStorageFault(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && (code === "SQLITE_FULL" || code.startsWith("SQLITE_IOERR"));
}

/** Thrown instead of the raw SQLite error, so callers (and the wire) see a retryable `unavailable`. */
export class StorageUnavailableError extends Error {
  readonly code = "unavailable";
  readonly retryable = true;
  constructor(fault: StorageFault, opts?: { cause?: unknown }) {
    super(
      `storage full: cannot write to the state dir ${fault.stateDir} (${fault.code}); free space there, the gateway recovers by itself`,
      opts,
    );
    this.name = "StorageUnavailableError";
  }
}

export class StorageFaultMonitor {
  private fault?: StorageFault;

  constructor(
    private readonly stateDir: string,
    /** a small real write that fails the same way a run's write would; throws while the disk is full */
    private readonly probe: () => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** Runs a write; a storage fault marks the store degraded and comes out as StorageUnavailableError. */
  guard<T>(write: () => T): T {
    try {
      return write();
    } catch (err) {
      if (!isStorageFault(err) || err instanceof StorageUnavailableError) throw err;
      throw new StorageUnavailableError(this.note(err), { cause: err });
    }
  }

  note(err: unknown): StorageFault {
    const code = String((err as { code?: unknown }).code);
    this.fault ??= { reason: "storage full", code, stateDir: this.stateDir, since: this.now() };
    return this.fault;
  }

  /**
   * The current fault, after a probe: a store that can write again is healthy again. Probed on every call while
   * degraded (only refused input and `health` ask then), so recovery needs no timer.
   */
  current(): StorageFault | undefined {
    if (!this.fault) return undefined;
    try {
      this.probe();
      this.fault = undefined;
    } catch (err) {
      if (!isStorageFault(err)) throw err;
    }
    return this.fault;
  }

  /** Throws StorageUnavailableError while the store cannot write (probing first). */
  assertWritable(): void {
    const fault = this.current();
    if (fault) throw new StorageUnavailableError(fault);
  }
}
