/**
 * The logger the hook systems write to. Kept to three levels so any host logger (console, pino, the gateway's
 * own) fits; `fields` carries the plugin/hook/folder names in structured form for log sinks that index them,
 * while the message itself always names them too so a plain console is still useful.
 */
export interface HookLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Every line a plugin logs starts with its id, so an operator can tell which plugin said it. */
export function prefixLogger(logger: HookLogger, prefix: string): HookLogger {
  return {
    info: (message, fields) => logger.info(`${prefix} ${message}`, fields),
    warn: (message, fields) => logger.warn(`${prefix} ${message}`, fields),
    error: (message, fields) => logger.error(`${prefix} ${message}`, fields),
  };
}

/** Third-party code throws anything (strings, plain objects, null); this always yields something printable. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === "string") return err;
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return String(err);
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
