/**
 * Errors after which the same write may well succeed a moment later: the server is restarting or refusing
 * connections for now, the connection broke, a deadlock or serialization victim. A caller that keeps data in memory
 * until it is stored (the run-event writer) retries on these instead of dropping the data. No `pg` import: callers
 * on the SQLite path load nothing extra.
 */
const TRANSIENT_SQLSTATES = new Set([
  "57P01", // admin_shutdown (pg_terminate_backend, a fast shutdown)
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up, in recovery)
  "53300", // too_many_connections
  "40001", // serialization_failure
  "40P01", // deadlock_detected
]);
const TRANSIENT_SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "ENOTFOUND",
]);
/** The driver's own errors for a connection that went away or never came; they carry no code. */
const TRANSIENT_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

export function isTransientPostgresError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  const code = typeof e?.code === "string" ? e.code : undefined;
  if (code !== undefined) {
    // class 08: connection exception
    return code.startsWith("08") || TRANSIENT_SQLSTATES.has(code) || TRANSIENT_SOCKET_CODES.has(code);
  }
  return typeof e?.message === "string" && TRANSIENT_MESSAGES.test(e.message);
}
