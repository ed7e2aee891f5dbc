import path from "node:path";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import { EnabledOverrides, type EnabledSwitches, type OverrideKind } from "./enabled-overrides.js";
import { importLegacyFile, type SettingsStore, SharedSettingsReader } from "./shared-settings.js";

const KINDS: readonly OverrideKind[] = ["skills", "plugins"];

/**
 * The operators' skill and plugin switches of a gateway fleet on Postgres, in the shared store (`operator_settings`,
 * keys `skills.<name>` and `plugins.<id>`), so a skill switched off on node A is off in node B's next run (within
 * SHARED_SETTINGS_CACHE_MS). A plugin switch acts at each node's next start, as on one node. A node's state-dir
 * `enabled-overrides.json` from before is imported once, at its first read.
 */
export class StoredEnabledSwitches implements EnabledSwitches {
  private switches: Record<OverrideKind, Map<string, boolean>> = { skills: new Map(), plugins: new Map() };
  private readonly readers: SharedSettingsReader[];
  private imported: Promise<void> | undefined;

  constructor(
    private readonly store: SettingsStore,
    private readonly clock: Clock,
    private readonly stateDir: string,
    private readonly logger?: Logger,
  ) {
    this.readers = KINDS.map(
      (kind) =>
        new SharedSettingsReader(store, `${kind}.`, clock, (rows) => {
          const next = new Map<string, boolean>();
          for (const row of rows) {
            const enabled = parseEnabled(row.value);
            if (enabled !== undefined) next.set(row.key.slice(kind.length + 1), enabled);
          }
          this.switches[kind] = next;
        }),
    );
  }

  async refresh(): Promise<void> {
    this.imported ??= this.importFile();
    await this.imported;
    await Promise.all(this.readers.map((r) => r.refresh()));
  }

  get(kind: OverrideKind, name: string): boolean | undefined {
    return this.switches[kind].get(name);
  }

  all(kind: OverrideKind): Array<[string, boolean]> {
    return [...this.switches[kind]];
  }

  async set(kind: OverrideKind, name: string, enabled: boolean): Promise<void> {
    await this.store.putOperatorSetting({
      key: `${kind}.${name}`,
      value: JSON.stringify({ enabled }),
      updatedAt: this.clock.now(),
    });
    this.switches[kind].set(name, enabled);
  }

  get path(): string {
    return "the shared store (operator_settings)";
  }

  /** The node's enabled-overrides.json of before: a switch already stored (another node's, newer) is kept. */
  private importFile(): Promise<void> {
    const file = path.join(this.stateDir, "enabled-overrides.json");
    return importLegacyFile(file, this.clock, this.logger, async () => {
      const old = new EnabledOverrides(this.stateDir, this.logger);
      let count = 0;
      for (const kind of KINDS) {
        const stored = new Set((await this.store.listOperatorSettings(`${kind}.`)).map((r) => r.key));
        for (const [name, enabled] of old.all(kind)) {
          if (stored.has(`${kind}.${name}`)) continue;
          await this.set(kind, name, enabled);
          count++;
        }
      }
      return count;
    });
  }
}

function parseEnabled(value: string): boolean | undefined {
  try {
    const v = JSON.parse(value) as { enabled?: unknown };
    return typeof v?.enabled === "boolean" ? v.enabled : undefined;
  } catch {
    return undefined;
  }
}
