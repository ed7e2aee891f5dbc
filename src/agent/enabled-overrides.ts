import fs from "node:fs";
import path from "node:path";
import type { Logger } from "../infra/logger.js";

const FILE_NAME = "enabled-overrides.json";

export type OverrideKind = "skills" | "plugins";

interface FileShape {
  version: 1;
  skills: Record<string, { enabled: boolean }>;
  plugins: Record<string, { enabled: boolean }>;
}

/**
 * Where a process keeps the operators' skill and plugin switches: this file on one node (SQLite), the shared store on
 * a Postgres fleet (stored-switches.ts). Reads are synchronous from what was last loaded; `refresh` loads again when
 * another node may have written.
 */
export interface EnabledSwitches {
  /** A promise when another node may have written (read again); nothing to wait for otherwise. */
  refresh(): Promise<void> | undefined;
  get(kind: OverrideKind, name: string): boolean | undefined;
  all(kind: OverrideKind): Array<[string, boolean]>;
  /** Throws (or rejects) when the switch cannot be written: nothing changed. */
  set(kind: OverrideKind, name: string, enabled: boolean): void | Promise<void>;
  /** where they are kept, for messages */
  readonly path: string;
}

/**
 * What operators switched on or off from the console (`skills.update`, `plugins.setEnabled`), in
 * <stateDir>/enabled-overrides.json (0600, written through a temp file and a rename). The config file is not
 * rewritten: it is the user's JSON5 with comments, and Loopgate has no config hot reload yet, so a switch kept here
 * beside it is the one that can act at once. An override wins over `plugins.entries.<id>.enabled`; skills have no
 * config switch. A skill switch reaches the next run's prompt; a plugin switch takes effect at the next start
 * (plugins are loaded once), which the answer says.
 */
export class EnabledOverrides implements EnabledSwitches {
  private readonly file: string;
  private data: FileShape = { version: 1, skills: {}, plugins: {} };

  constructor(
    stateDir: string,
    private readonly logger?: Logger,
  ) {
    this.file = path.join(stateDir, FILE_NAME);
    this.load();
  }

  get path(): string {
    return this.file;
  }

  /** One process owns the file: what it loaded is current. */
  refresh(): undefined {
    return undefined;
  }

  /** The override for one skill or plugin, undefined when nobody switched it. */
  get(kind: OverrideKind, name: string): boolean | undefined {
    return Object.hasOwn(this.data[kind], name) ? this.data[kind][name]?.enabled : undefined;
  }

  /** every override of one kind, as [name, enabled] */
  all(kind: OverrideKind): Array<[string, boolean]> {
    return Object.entries(this.data[kind]).map(([name, v]) => [name, v.enabled]);
  }

  /** Throws when the file cannot be written: the caller answers with the reason, nothing changed. */
  set(kind: OverrideKind, name: string, enabled: boolean): void {
    const next: FileShape = { ...this.data, [kind]: { ...this.data[kind], [name]: { enabled } } };
    const temp = `${this.file}.${process.pid}.tmp`;
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    fs.writeFileSync(temp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
    fs.renameSync(temp, this.file);
    this.data = next;
  }

  private load(): void {
    let text: string;
    try {
      text = fs.readFileSync(this.file, "utf8");
    } catch {
      return; // none yet
    }
    try {
      const raw = JSON.parse(text) as Partial<FileShape>;
      if (raw.version !== 1) throw new Error("expected {version: 1, skills: {...}, plugins: {...}}");
      this.data = { version: 1, skills: switches(raw.skills), plugins: switches(raw.plugins) };
    } catch (err) {
      // kept as it is (not overwritten until an operator switches something), and said once
      this.logger?.warn(`enabled overrides: ${this.file} is unreadable (${(err as Error).message}); ignoring it`);
    }
  }
}

function switches(value: unknown): Record<string, { enabled: boolean }> {
  const out: Record<string, { enabled: boolean }> = {};
  if (value === null || typeof value !== "object") return out;
  for (const [name, v] of Object.entries(value)) {
    if (typeof (v as { enabled?: unknown })?.enabled === "boolean")
      out[name] = { enabled: (v as { enabled: boolean }).enabled };
  }
  return out;
}
