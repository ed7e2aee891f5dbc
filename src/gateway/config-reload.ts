import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import JSON5 from "json5";
import { loadDotEnvFiles } from "../config/dotenv.js";
import { ConfigError } from "../config/errors.js";
import { loadConfigText } from "../config/load.js";
import { applyMergePatch, arraysShortenedBy } from "../config/merge-patch.js";
import type { LoopgateConfig } from "../config/schema.js";
import { CONFIG_MAX_BYTES, parseConfigText, readConfigText } from "../config/source.js";
import { resolveStateDir } from "../config/state-dir.js";
import type { Clock } from "../infra/clock.js";
import type { Logger } from "../infra/logger.js";
import type { ConfigChange, LiveConfig } from "../node/live-config.js";
import { keepRedactedSecrets } from "./redact-config.js";

/*
 * Live configuration (SPEC 26): the gateway's config file watched (and reloaded on SIGHUP), and config.patch /
 * config.apply writing it. Every candidate is loaded with the loader the start uses (config/load.ts: JSON5, schema,
 * the `env` block, load-time checks) before anything changes; a bad one is logged with its problems (paths and
 * reasons, never values) and the running config stays. One reload or write at a time.
 */

const FILE_CHANGED = "file changed";

export type ReloadMode = "hybrid" | "hot" | "off";

export interface ConfigReloaderOptions {
  /** the config file (it may not exist yet: the gateway then runs on defaults until one is written) */
  file: string;
  live: LiveConfig;
  /** the process's environment: the reloaded `.env` files and the config's `env` block fill in what it lacks */
  env: NodeJS.ProcessEnv;
  logger: Logger;
  clock: Clock;
  /** `gateway.reload` as the gateway started with it (a change to it is a restart key) */
  mode: ReloadMode;
  debounceMs: number;
  /** what loading cannot check but applying needs (the sandbox backends a config names) */
  check?: (next: LoopgateConfig) => Promise<void>;
}

export type ReloadOutcome =
  | { status: "unchanged"; hash?: string }
  | { status: "invalid"; problems: string[]; hash?: string }
  | { status: "applied"; hash: string; change: ConfigChange };

/** config.patch / config.apply refused: `code` is the gateway error code the method answers with. */
export class ConfigWriteError extends Error {
  constructor(
    readonly code: "invalid_params" | "conflict" | "unavailable",
    message: string,
  ) {
    super(message);
    this.name = "ConfigWriteError";
  }
}

export interface ConfigWrite {
  /** a JSON5 merge patch (config.patch) or a whole config (config.apply) */
  raw: string;
  kind: "patch" | "replace";
  /** config.get's `hash`; required when the file exists (OpenClaw's rule), so a write never loses another one */
  baseHash?: string;
  /** arrays the client confirms it means to shorten (OpenClaw's replacePaths) */
  replacePaths?: readonly string[];
  /** the operator's note, logged with the write */
  note?: string;
  /** who wrote it, for the log line (a connection's actor) */
  by?: string;
}

export function configHash(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function problemsOf(err: unknown): string[] {
  if (err instanceof ConfigError) return err.problems;
  return [(err as Error)?.message ?? String(err)];
}

export class ConfigReloader {
  private lastHash: string | undefined;
  private serial: Promise<unknown> = Promise.resolve();
  private watcher: fs.FSWatcher | undefined;
  private timer: unknown;
  private closed = false;

  /**
   * The first reload always loads the file (and finds nothing changed if it is what the process started with): a
   * hash taken now could already be of an edit made while the gateway was starting, which would then be missed.
   */
  constructor(private readonly opts: ConfigReloaderOptions) {}

  get file(): string {
    return this.opts.file;
  }

  /**
   * Watches the file's folder, not the file: editors save by writing a new file and renaming it over the old one,
   * which a watch on the file itself stops seeing. Changes settle for `debounceMs` before the file is read. Mode
   * "off" watches nothing.
   */
  start(): void {
    if (this.opts.mode === "off" || this.watcher || this.closed) return;
    const dir = path.dirname(this.opts.file);
    const base = path.basename(this.opts.file);
    try {
      this.watcher = fs.watch(dir, { persistent: false }, (_event, name) => {
        if (name === null || name.toString() === base) this.schedule();
      });
      this.watcher.on("error", (err) => {
        this.opts.logger.warn("config reload: watching the config file stopped (SIGHUP still reloads it)", {
          file: this.opts.file,
          error: err.message,
        });
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch (err) {
      this.opts.logger.warn("config reload: cannot watch the config file's folder (SIGHUP still reloads it)", {
        file: this.opts.file,
        error: (err as Error).message,
      });
    }
  }

  close(): void {
    this.closed = true;
    this.watcher?.close();
    this.watcher = undefined;
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.closed) return;
    if (this.timer !== undefined) this.opts.clock.clearTimeout(this.timer);
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = undefined;
      void this.reload(FILE_CHANGED);
    }, this.opts.debounceMs);
  }

  /**
   * The hash of the file's content now (config.get's `hash`); undefined when there is no file, or it cannot be read
   * (over the size cap: a reload reports why).
   */
  currentHash(): string | undefined {
    try {
      return this.read()?.hash;
    } catch {
      return undefined;
    }
  }

  exists(): boolean {
    return fs.existsSync(this.opts.file);
  }

  /** Reads the file and applies it if its content changed since the last read; never throws. */
  reload(reason: string): Promise<ReloadOutcome> {
    return this.inTurn(async () => {
      let read: { text: string; hash: string } | undefined;
      try {
        read = this.read();
      } catch (err) {
        return this.refused(reason, problemsOf(err));
      }
      if (!read) return this.refused(reason, ["(file): not found (deleted or renamed?)"]);
      if (read.hash === this.lastHash) {
        // the watcher sees many events per save; an operator's SIGHUP deserves an answer
        if (reason !== FILE_CHANGED) this.opts.logger.info("config reload: the file is unchanged", { reason });
        return { status: "unchanged", hash: read.hash };
      }
      // the same bad content is reported once, not at every event the editor's save causes
      this.lastHash = read.hash;
      return this.applyText(read.text, read.hash, reason);
    });
  }

  /**
   * config.patch (a merge patch) or config.apply (a whole config): checked against the base hash, secrets the
   * client saw redacted kept, the result validated like a reload, then written atomically (same mode) and applied.
   */
  write(req: ConfigWrite): Promise<{ hash: string; change: ConfigChange }> {
    return this.inTurn(async () => {
      const current = this.read();
      if (current && req.baseHash === undefined) {
        throw new ConfigWriteError(
          "invalid_params",
          "params.baseHash: required when the config file exists: pass the hash config.get returned",
        );
      }
      if (req.baseHash !== undefined && req.baseHash !== current?.hash) {
        throw new ConfigWriteError(
          "conflict",
          "params.baseHash: the config file changed since that config.get (another write or an edit); read it again with config.get and retry",
        );
      }
      let incoming: unknown;
      try {
        incoming = JSON5.parse(req.raw);
      } catch (err) {
        const e = err as Error & { lineNumber?: number; columnNumber?: number };
        const where = e.lineNumber ? ` at line ${e.lineNumber}, column ${e.columnNumber}` : "";
        throw new ConfigWriteError(
          "invalid_params",
          `params.raw: not valid JSON5${where}: ${e.message.replace(/^JSON5: /, "")}`,
        );
      }
      if (incoming === null || typeof incoming !== "object" || Array.isArray(incoming)) {
        throw new ConfigWriteError("invalid_params", "params.raw: expected an object");
      }
      let base: Record<string, unknown> = {};
      try {
        if (current) base = parseConfigText(current.text, this.opts.file);
      } catch (err) {
        throw new ConfigWriteError(
          "unavailable",
          `the config file cannot be read as it is (${problemsOf(err).join("; ")}): fix it by hand first`,
        );
      }
      const restored = keepRedactedSecrets(incoming, base);
      if (restored.problems.length > 0) throw new ConfigWriteError("invalid_params", restored.problems.join("; "));
      let next: unknown = restored.value;
      if (req.kind === "patch") {
        const confirmed = new Set(req.replacePaths ?? []);
        const dropped = arraysShortenedBy(base, next).filter((p) => !confirmed.has(p));
        if (dropped.length > 0) {
          throw new ConfigWriteError(
            "invalid_params",
            `params.raw: replaces ${dropped.join(", ")} with a list that drops entries; name ${dropped.length > 1 ? "them" : "it"} in params.replacePaths to confirm`,
          );
        }
        next = applyMergePatch(base, next);
      }
      const text = `${JSON.stringify(next, null, 2)}\n`;
      if (Buffer.byteLength(text) > CONFIG_MAX_BYTES) {
        throw new ConfigWriteError("invalid_params", `params.raw: the config would exceed ${CONFIG_MAX_BYTES} bytes`);
      }
      // validated before anything is written: an invalid write changes nothing (a copy of the environment: the
      // candidate's `env` block must not leak into the process unless it is applied)
      try {
        const candidate = loadConfigText(text, this.opts.file, { ...this.opts.env }, () => {});
        await this.opts.check?.(candidate);
      } catch (err) {
        throw new ConfigWriteError("invalid_params", `the config would not load: ${problemsOf(err).join("; ")}`);
      }
      writeFileAtomically(this.opts.file, text);
      const hash = configHash(text);
      this.lastHash = hash;
      this.opts.logger.info(`config.${req.kind === "patch" ? "patch" : "apply"} wrote the config file`, {
        file: this.opts.file,
        ...(req.by ? { by: req.by } : {}),
        ...(req.note ? { note: req.note } : {}),
      });
      const outcome = await this.applyText(text, hash, `config.${req.kind === "patch" ? "patch" : "apply"}`);
      if (outcome.status !== "applied") {
        // validated a moment ago: only a check that depends on the machine (a sandbox backend) can get here
        const problems = outcome.status === "invalid" ? outcome.problems.join("; ") : "unchanged";
        throw new ConfigWriteError("unavailable", `written, but the gateway could not apply it: ${problems}`);
      }
      return { hash, change: outcome.change };
    });
  }

  private inTurn<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.serial.then(fn);
    this.serial = run.catch(() => undefined);
    return run;
  }

  private read(): { text: string; hash: string } | undefined {
    let text: string;
    try {
      text = readConfigText(this.opts.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
    return { text, hash: configHash(text) };
  }

  private async applyText(text: string, hash: string, reason: string): Promise<ReloadOutcome> {
    const { env, logger } = this.opts;
    let next: LoopgateConfig;
    try {
      // as at start: .env files fill in variables the environment lacks (a key added there since is found)
      loadDotEnvFiles(env, process.cwd(), resolveStateDir);
      next = loadConfigText(text, this.opts.file, env, (message) => logger.warn(message));
      await this.opts.check?.(next);
    } catch (err) {
      return this.refused(reason, problemsOf(err), hash);
    }
    const change = await this.opts.live.apply(next);
    if (change.applied.length > 0) {
      logger.info("config reloaded", { reason, changed: change.applied.join(", ") });
    } else if (change.restart.length === 0) {
      logger.info("config reloaded: no setting changed", { reason });
    }
    if (change.restart.length > 0) logger.warn(`config: restart to apply: ${change.restart.join(", ")}`);
    return { status: "applied", hash, change };
  }

  private refused(reason: string, problems: string[], hash?: string): ReloadOutcome {
    this.opts.logger.error("config reload ignored: the file is not valid; the running config stays", {
      reason,
      file: this.opts.file,
      problems: problems.join("; "),
    });
    return { status: "invalid", problems, ...(hash ? { hash } : {}) };
  }
}

/** A temp file beside the config (same filesystem: the rename is atomic), with the config's mode, renamed over it. */
function writeFileAtomically(file: string, text: string): void {
  let mode = 0o600;
  try {
    mode = fs.statSync(file).mode & 0o777;
  } catch {
    // a new file: the owner's alone, like the state dir's files (it may hold keys)
  }
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomUUID().slice(0, 8)}.tmp`);
  try {
    fs.writeFileSync(tmp, text, { mode });
    fs.chmodSync(tmp, mode);
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw new ConfigWriteError("unavailable", `cannot write the config file: ${(err as Error).message}`);
  }
}
