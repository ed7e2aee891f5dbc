import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { Logger } from "../infra/logger.js";
import { normalizeCommand } from "../tools/exec-policy.js";
import { redactText } from "../tools/sanitize.js";

const FILE_NAME = "exec-approvals.json";

interface Entry {
  agentId: string;
  /** sha256 (hex) of the exact command, whitespace runs as one space, that an operator answered allow-always for */
  sha256: string;
  /** the command for people reading the file, secrets masked (the hash is what is matched) */
  command: string;
  addedAtMs: number;
}

interface FileShape {
  version: 1;
  allowAlways: Entry[];
}

/**
 * The commands operators answered `allow-always` for, per agent, in <stateDir>/exec-approvals.json (0600, written
 * through a temp file and a rename), so they survive a restart. An entry allows that exact command only, not a
 * pattern: the operator saw this text and nothing wider. Broader rules belong in tools.exec.allowlist. The file keys
 * on a hash of the command, so a secret on the command line is not kept at rest.
 */
export class AllowAlwaysFile {
  private readonly file: string;
  private readonly entries = new Map<string, Entry>();

  constructor(
    stateDir: string,
    private readonly logger?: Logger,
  ) {
    this.file = path.join(stateDir, FILE_NAME);
    this.load();
  }

  has(agentId: string, command: string): boolean {
    return this.entries.has(`${agentId}\u0000${commandHash(command)}`);
  }

  add(agentId: string, command: string, now: number): void {
    const sha256 = commandHash(command);
    const entry = { agentId, sha256, command: redactText(normalizeCommand(command)), addedAtMs: now };
    const k = `${agentId}\u0000${sha256}`;
    if (this.entries.has(k)) return;
    this.entries.set(k, entry);
    try {
      this.save();
    } catch (err) {
      // The answer still holds for this process; only its persistence failed.
      this.logger?.warn(`exec approvals: could not save ${this.file}: ${(err as Error).message}`);
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
      if (data.version !== 1 || !Array.isArray(data.allowAlways))
        throw new Error("expected {version: 1, allowAlways: [...]}");
      for (const e of data.allowAlways) {
        if (typeof e?.agentId !== "string" || typeof e.sha256 !== "string") continue;
        this.entries.set(`${e.agentId}\u0000${e.sha256}`, e);
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
    const data: FileShape = { version: 1, allowAlways: [...this.entries.values()] };
    const temp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(temp, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
    fs.renameSync(temp, this.file);
  }
}

function commandHash(command: string): string {
  return createHash("sha256").update(normalizeCommand(command)).digest("hex");
}
