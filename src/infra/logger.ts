/**
 * A small leveled logger with structured fields, written by hand rather than pino: importing pino alone costs
 * about 40 ms of gateway start on the development VM, and its JSON-only output would still need a formatter for the
 * text lines. A line is formatted only when its level is enabled, so disabled levels cost one comparison.
 *
 * text: `2026-11-30T19:04:05.123Z INFO  connect client=cli mode=cli role=operator`
 * json: `{"time":"2026-11-30T19:04:05.123Z","level":"info","msg":"connect","client":"cli",...}`
 *
 * plain (the default, for one-shot commands, where a timestamp is noise): `[loopgate] warn: message key=value`
 *
 * The CLI keeps its logger at "warn" so logs never mix into streamed replies; the gateway logs at "info".
 */

/** Values a log line carries; undefined fields are left out. */
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** Lets a caller skip work (timing, building fields) for a level that is off. Absent means "assume enabled". */
  isEnabled?(level: LineLevel): boolean;
}

const levels = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = keyof typeof levels;
export type LineLevel = Exclude<LogLevel, "silent">;
/** What an operator can choose (`--log-format`); "plain" is the one-shot commands' default. */
export type LogFormat = "text" | "json";

export const LOG_LEVELS: readonly LineLevel[] = ["error", "warn", "info", "debug"];
export const LOG_FORMATS: readonly LogFormat[] = ["text", "json"];

export function isLogLevel(value: string): value is LogLevel {
  return Object.hasOwn(levels, value);
}

export function isLogFormat(value: string): value is LogFormat {
  return value === "text" || value === "json";
}

/**
 * The level from `LOOPGATE_LOG_LEVEL` (case-insensitive), or `fallback`. A value that is not a level is reported
 * through `warn` (once, by the caller's one call) and the fallback is used: a typo must not silence the logs.
 */
export function logLevelFromEnv(
  env: NodeJS.ProcessEnv,
  fallback: LogLevel,
  warn: (message: string) => void = () => {},
): LogLevel {
  const raw = env.LOOPGATE_LOG_LEVEL?.trim();
  if (!raw) return fallback;
  const level = raw.toLowerCase();
  if (isLogLevel(level)) return level;
  warn(`LOOPGATE_LOG_LEVEL: expected one of ${LOG_LEVELS.join(", ")}, got "${raw}"; using "${fallback}"`);
  return fallback;
}

export interface LoggerOptions {
  /** Default: LOOPGATE_LOG_LEVEL, else "warn" (an invalid value falls back silently here; the gateway warns). */
  level?: LogLevel;
  /** Default "plain". */
  format?: LogFormat | "plain";
  /** receives one line without the trailing newline; default stderr */
  write?: (line: string) => void;
  /** Default Date.now; injected by tests for stable timestamps. */
  now?: () => number;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const min = levels[opts.level ?? logLevelFromEnv(process.env, "warn")];
  const write = opts.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const now = opts.now ?? Date.now;
  const format = opts.format === "json" ? jsonLine : opts.format === "text" ? textLine : plainLine;
  const at = (level: LineLevel) => (message: string, fields?: LogFields) => {
    if (levels[level] >= min) write(format(new Date(now()).toISOString(), level, message, fields));
  };
  return {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    isEnabled: (level) => levels[level] >= min,
  };
}

/** A field value as text: bare when it is one plain token, JSON-quoted when it has spaces, quotes or `=`. */
function textValue(value: unknown): string {
  const text = typeof value === "string" ? value : value instanceof Error ? value.message : JSON.stringify(value);
  return text === "" || /[\s"=\\]/.test(text) ? JSON.stringify(text) : text;
}

function textLine(time: string, level: LineLevel, message: string, fields?: LogFields): string {
  return `${time} ${level.toUpperCase().padEnd(5)} ${message}${textFields(fields)}`;
}

function plainLine(_time: string, level: LineLevel, message: string, fields?: LogFields): string {
  return `[loopgate] ${level}: ${message}${textFields(fields)}`;
}

function textFields(fields: LogFields | undefined): string {
  let line = "";
  if (fields) {
    for (const key in fields) {
      const value = fields[key];
      if (value !== undefined) line += ` ${key}=${textValue(value)}`;
    }
  }
  return line;
}

function jsonLine(time: string, level: LineLevel, msg: string, fields?: LogFields): string {
  const record: Record<string, unknown> = { time, level, msg };
  if (fields) {
    for (const key in fields) {
      // time/level/msg are the collector's keys: a field of the same name must not overwrite them
      if (!(key in record)) record[key] = fields[key] instanceof Error ? (fields[key] as Error).message : fields[key];
    }
  }
  return JSON.stringify(record);
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, isEnabled: () => false };
