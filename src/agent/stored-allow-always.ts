import { createHash } from "node:crypto";
import path from "node:path";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import { sessionMatchesAny } from "../session/session-glob.js";
import { normalizeCommand } from "../tools/exec-policy.js";
import { redactText } from "../tools/sanitize.js";
import {
  type AllowAlwaysEntry,
  AllowAlwaysFile,
  type AllowAlwaysList,
  type AllowAlwaysView,
  commandHash,
} from "./exec-allow-always.js";
import { importLegacyFile, type SettingsStore, SharedSettingsReader } from "./shared-settings.js";

const ALLOWLIST_KEY = "exec.allowlist";
const ENTRY_PREFIX = "exec.allowAlways.";
const PREFIX = "exec.";

/**
 * The operators' exec allow-always answers and allowlist patterns of a gateway fleet on Postgres, in the shared store
 * (`operator_settings`), so an "allow always" answered on node A holds on node B's next exec check (within
 * SHARED_SETTINGS_CACHE_MS). The rules are AllowAlwaysFile's (a hash of the exact command, the approver's session
 * globs); one row per answer, so two nodes answering at once both keep theirs. A node's state-dir
 * `exec-approvals.json` from before is imported once, at its first read.
 */
export class StoredAllowAlways implements AllowAlwaysList {
  private entries = new Map<string, AllowAlwaysEntry[]>();
  private patterns: string[] = [];
  private readonly reader: SharedSettingsReader;
  private imported: Promise<void> | undefined;
  /** the answers' writes, one after another */
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: SettingsStore,
    private readonly clock: Clock,
    private readonly stateDir: string,
    private readonly logger?: Logger,
  ) {
    this.reader = new SharedSettingsReader(store, PREFIX, clock, (rows) => {
      const entries = new Map<string, AllowAlwaysEntry[]>();
      let patterns: string[] = [];
      for (const row of rows) {
        try {
          if (row.key === ALLOWLIST_KEY) patterns = JSON.parse(row.value) as string[];
          else if (row.key.startsWith(ENTRY_PREFIX)) {
            const e = JSON.parse(row.value) as AllowAlwaysEntry;
            const k = `${e.agentId}\u0000${e.sha256}`;
            entries.set(k, [...(entries.get(k) ?? []), e]);
          }
        } catch (err) {
          this.logger?.warn(`exec approvals: stored setting ${row.key} does not parse; skipped`, {
            error: (err as Error).message,
          });
        }
      }
      this.entries = entries;
      this.patterns = patterns;
    });
  }

  async refresh(): Promise<void> {
    this.imported ??= this.importFile();
    await this.imported;
    await this.reader.refresh();
  }

  has(agentId: string, command: string, sessionKey: string): boolean {
    const found = this.entries.get(`${agentId}\u0000${commandHash(command)}`);
    return found?.some((e) => e.sessions === undefined || sessionMatchesAny(e.sessions, sessionKey)) ?? false;
  }

  add(agentId: string, command: string, now: number, sessions?: readonly string[]): void {
    const entry = entryOf(agentId, command, now, sessions);
    const k = `${agentId}\u0000${entry.sha256}`;
    const same = this.entries.get(k) ?? [];
    if (same.some((e) => e.sessions === undefined || scopeOf(e) === scopeOf(entry))) return;
    this.entries.set(k, [...same, entry]);
    // the answer holds here at once; the write makes it hold on the other nodes
    this.writing = this.writing.then(() =>
      this.put(entry).catch((err: Error) =>
        this.logger?.warn(
          `exec approvals: an allow-always answer could not be stored for the other nodes: ${err.message}`,
        ),
      ),
    );
  }

  /** Resolves once the answers given so far are stored (or their failure was logged). */
  settled(): Promise<void> {
    return this.writing;
  }

  get allowlist(): readonly string[] {
    return this.patterns;
  }

  get path(): string {
    return "the shared store (operator_settings)";
  }

  view(): AllowAlwaysView {
    return { version: 2, allowlist: [...this.patterns], allowAlways: [...this.entries.values()].flat() };
  }

  async setAllowlist(patterns: readonly string[]): Promise<void> {
    await this.store.putOperatorSetting({
      key: ALLOWLIST_KEY,
      value: JSON.stringify(patterns),
      updatedAt: this.clock.now(),
    });
    this.patterns = [...patterns];
    this.reader.invalidate();
  }

  private put(entry: AllowAlwaysEntry): Promise<void> {
    return this.store.putOperatorSetting({
      key: `${ENTRY_PREFIX}${entry.agentId}.${entry.sha256}.${scopeHash(entry)}`,
      value: JSON.stringify(entry),
      updatedAt: entry.addedAtMs,
    });
  }

  /** The node's exec-approvals.json of before: its answers and patterns join the shared ones, then it is set aside. */
  private importFile(): Promise<void> {
    const file = path.join(this.stateDir, "exec-approvals.json");
    return importLegacyFile(file, this.clock, this.logger, async () => {
      const old = new AllowAlwaysFile(this.stateDir, this.logger).view();
      for (const e of old.allowAlways) await this.put(e);
      if (old.allowlist.length > 0) {
        const stored = await this.store.listOperatorSettings(ALLOWLIST_KEY);
        const current = stored[0] ? (JSON.parse(stored[0].value) as string[]) : [];
        await this.setAllowlist([...new Set([...current, ...old.allowlist])]);
      }
      return old.allowAlways.length + old.allowlist.length;
    });
  }
}

function entryOf(agentId: string, command: string, now: number, sessions?: readonly string[]): AllowAlwaysEntry {
  const scoped = sessions === undefined || sessions.includes("*") ? undefined : [...sessions].sort();
  return {
    agentId,
    sha256: commandHash(command),
    command: redactText(normalizeCommand(command)),
    ...(scoped ? { sessions: scoped } : {}),
    addedAtMs: now,
  };
}

function scopeOf(e: AllowAlwaysEntry): string {
  return e.sessions === undefined ? "*" : e.sessions.join("\u0000");
}

function scopeHash(e: AllowAlwaysEntry): string {
  return createHash("sha256").update(scopeOf(e)).digest("hex").slice(0, 16);
}
