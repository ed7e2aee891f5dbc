/** A minimal leveled logger. The CLI keeps it at "warn" so logs never mix into streamed replies on stdout. */
export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

const levels = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
export type LogLevel = keyof typeof levels;

export function createLogger(opts: { level?: LogLevel; write?: (line: string) => void; prefix?: string } = {}): Logger {
  const min = levels[opts.level ?? ((process.env.LOOPGATE_LOG_LEVEL as LogLevel) || "warn")] ?? levels.warn;
  const write = opts.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const prefix = opts.prefix ? `${opts.prefix} ` : "";
  const at = (level: Exclude<LogLevel, "silent">) => (message: string) => {
    if (levels[level] >= min) write(`[loopgate] ${level}: ${prefix}${message}`);
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
