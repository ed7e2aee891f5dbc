import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Logger } from "../infra/logger.js";
import { sessionMatchesAny } from "../session/session-glob.js";
import { normalizeCommand } from "../tools/exec-policy.js";
import { redactText } from "../tools/sanitize.js";

const FILE_NAME = "exec-approvals.json";

export interface AllowAlwaysEntry {
  agentId: string;
  /** sha256 (hex) of the exact command, whitespace runs as one space, that an operator answered allow-always for */
  sha256: string;
  /** the command for people reading the file, secrets masked (the hash is what is matched) */
  command: string;
  /**
   * The session globs of the approver's token grant: the answer holds only in those sessions, because that approver
   * could not have been asked anywhere else. Absent: every session (an approver with a full grant, the CLI's own
   * terminal prompt, and entries written before answers were confined).
   */
  sessions?: string[];
  addedAtMs: number;
}

interface FileShape {
  /** 2 since entries carry `sessions`: an older Loopgate sets a v2 file aside instead of reading it wider */
  version: 1 | 2;
  allowAlways: AllowAlwaysEntry[];
  /**
   * Operators' allowlist patterns (exec.approvals.set, the console's exec policy page), matched like
   * tools.exec.allowlist and added to it. Absent in files written before it existed.
   */
  allowlist?: string[];
}

/**
 * Where a process keeps the operators' allow-always answers and allowlist patterns: this file on one node (SQLite),
 * the shared store on a Postgres fleet (stored-allow-always.ts). Reads are synchronous from what was last loaded;
 * `refresh` loads again when the source can change under the process (another node wrote it).
 */
export interface AllowAlwaysList {
  /** A promise when the source may have changed under this process (read again); nothing to wait for otherwise. */
  refresh(): Promise<void> | undefined;
  has(agentId: string, command: string, sessionKey: string): boolean;
  add(agentId: string, command: string, now: number, sessions?: readonly string[]): void;
  readonly allowlist: readonly string[];
  /** where they are kept, for messages */
  readonly path: string;
  view(): AllowAlwaysView;
  /** Throws (or rejects) when they cannot be written: nothing changed. */
  setAllowlist(patterns: readonly string[]): void | Promise<void>;
}

/** What exec.approvals.get shows of the file: the patterns, and the allow-always answers (commands masked). */
export interface AllowAlwaysView {
  version: 2;
  allowlist: string[];
  allowAlways: AllowAlwaysEntry[];
}

/**
 * The commands operators answered `allow-always` for, per agent, in <stateDir>/exec-approvals.json (0600, written
 * through a temp file and a rename), so they survive a restart. An entry allows that exact command only, not a
 * pattern: the operator saw this text and nothing wider. Broader rules belong in tools.exec.allowlist. The file keys
 * on a hash of the command, so a secret on the command line is not kept at rest. An answer given by an approver
 * whose token grants only some sessions holds only inside those sessions (several tenants share one gateway: one
 * tenant's approver must not widen another tenant's exec policy).
 */
export class AllowAlwaysFile implements AllowAlwaysList {
  private readonly file: string;
  /** agentId + command hash → the entries for it (one per distinct set of session globs) */
  private readonly entries = new Map<string, AllowAlwaysEntry[]>();
  private patterns: string[] = [];

  constructor(
    stateDir: string,
    private readonly logger?: Logger,
  ) {
    this.file = path.join(stateDir, FILE_NAME);
    this.load();
  }

  /** One process owns the file: what it loaded is current. */
  refresh(): undefined {
    return undefined;
  }

  /** Whether an allow-always answer covers this command of this agent in this session. */
  has(agentId: string, command: string, sessionKey: string): boolean {
    const found = this.entries.get(`${agentId}\u0000${commandHash(command)}`);
    return found?.some((e) => e.sessions === undefined || sessionMatchesAny(e.sessions, sessionKey)) ?? false;
  }

  /** `sessions`: the approver's session globs; undefined when the answer holds in every session. */
  add(agentId: string, command: string, now: number, sessions?: readonly string[]): void {
    const sha256 = commandHash(command);
    const scoped = sessions === undefined || sessions.includes("*") ? undefined : [...sessions].sort();
    const entry: AllowAlwaysEntry = {
      agentId,
      sha256,
      command: redactText(normalizeCommand(command)),
      ...(scoped ? { sessions: scoped } : {}),
      addedAtMs: now,
    };
    const k = `${agentId}\u0000${sha256}`;
    const same = this.entries.get(k) ?? [];
    if (same.some((e) => e.sessions === undefined || e.sessions.join("\u0000") === scoped?.join("\u0000"))) return;
    same.push(entry);
    this.entries.set(k, same);
    try {
      this.save();
    } catch (err) {
      // The answer still holds for this process; only its persistence failed.
      this.logger?.warn(`exec approvals: could not save ${this.file}: ${(err as Error).message}`);
    }
  }

  /** the file's allowlist patterns (exec.approvals.set) */
  get allowlist(): readonly string[] {
    return this.patterns;
  }

  get path(): string {
    return this.file;
  }

  view(): AllowAlwaysView {
    return { version: 2, allowlist: [...this.patterns], allowAlways: [...this.entries.values()].flat() };
  }

  /** Replaces the allowlist patterns (already validated); throws when the file cannot be written, nothing changed. */
  setAllowlist(patterns: readonly string[]): void {
    const before = this.patterns;
    this.patterns = [...patterns];
    try {
      this.save();
    } catch (err) {
      this.patterns = before;
      throw err;
    }
  }

  private load(): void {
    let text: string;
    try {
      text = fs.readFileSync(this.file, "utf8");
    } catch {
      return; // none yet
    }
    try {
      const data = JSON.parse(text) as Partial<FileShape>;
      if ((data.version !== 1 && data.version !== 2) || !Array.isArray(data.allowAlways))
        throw new Error("expected {version: 2, allowAlways: [...]}");
      if (data.allowlist !== undefined) {
        if (!isStringArray(data.allowlist)) throw new Error("allowlist: expected an array of glob patterns");
        this.patterns = data.allowlist;
      }
      for (const e of data.allowAlways) {
        if (typeof e?.agentId !== "string" || typeof e.sha256 !== "string") continue;
        if (e.sessions !== undefined && !isStringArray(e.sessions)) continue;
        const k = `${e.agentId}\u0000${e.sha256}`;
        this.entries.set(k, [...(this.entries.get(k) ?? []), e]);
      }
    } catch (err) {
      // Kept aside rather than overwritten by the next answer, so an operator can repair it.
      const aside = `${this.file}.corrupt-${Date.now()}`;
      this.logger?.warn(
        `exec approvals: ${this.file} is unreadable (${(err as Error).message}); moved it to ${aside} and starting empty`,
      );
      try {
        fs.renameSync(this.file, aside);
      } catch {
        // nothing more to do: the next save replaces it
      }
    }
  }

  private save(): void {
    const data: FileShape = {
      version: 2,
      allowAlways: [...this.entries.values()].flat(),
      ...(this.patterns.length ? { allowlist: this.patterns } : {}),
    };
    const temp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(temp, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
    fs.renameSync(temp, this.file);
  }
}

export function commandHash(command: string): string {
  return createHash("sha256").update(normalizeCommand(command)).digest("hex");
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === "string");
}
