import fs from "node:fs";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import type { OperatorSetting, Store } from "../storage/types.js";

/** How long a node trusts what it last read of the shared operator settings (auth health's cache is as long). */
export const SHARED_SETTINGS_CACHE_MS = 1000;

export type SettingsStore = Pick<Store, "listOperatorSettings" | "putOperatorSetting">;

/**
 * The operator settings under one key prefix, as a node of a fleet reads them: from the shared store, at most once per
 * SHARED_SETTINGS_CACHE_MS (the callers ask before they decide: a run's exec check, a turn's skills), one read at a
 * time. So a change made on another node holds here within a second, and a node that decides often reads once a
 * second, not once per decision.
 */
export class SharedSettingsReader {
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly store: SettingsStore,
    private readonly prefix: string,
    private readonly clock: Clock,
    private readonly apply: (rows: OperatorSetting[]) => void,
  ) {}

  /** Reads the rows again unless the last read is younger than the cache window. */
  async refresh(): Promise<void> {
    if (this.clock.now() - this.readAt < SHARED_SETTINGS_CACHE_MS) return;
    this.reading ??= this.store
      .listOperatorSettings(this.prefix)
      .then((rows) => {
        this.apply(rows);
        this.readAt = this.clock.now();
      })
      .finally(() => {
        this.reading = undefined;
      });
    await this.reading;
  }

  /** The next `refresh` reads the store (after a write here). */
  invalidate(): void {
    this.readAt = Number.NEGATIVE_INFINITY;
  }
}

/**
 * A state-dir file an earlier Loopgate kept these settings in: imported once into the shared store, then renamed
 * `<file>.imported-<time>` so it is neither read again nor lost (an operator can still open it). Nothing is dropped:
 * the caller writes every entry it held before the rename.
 */
export async function importLegacyFile(
  file: string,
  clock: Clock,
  logger: Logger | undefined,
  write: () => Promise<number>,
): Promise<void> {
  if (!fs.existsSync(file)) return;
  const count = await write();
  const aside = `${file}.imported-${clock.now()}`;
  fs.renameSync(file, aside);
  logger?.info(`imported ${count} operator setting${count === 1 ? "" : "s"} from ${file} into the shared store`, {
    keptAs: aside,
  });
}
