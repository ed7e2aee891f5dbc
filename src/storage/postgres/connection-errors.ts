/**
 * Whether a Postgres failure is the connection's, not the statement's: the server restarted or terminated the backend
 * (pg_terminate_backend), the network dropped, the pool could not connect in time. Such a write did not happen (or
 * its transaction was rolled back) and the same write on a new connection may succeed, so callers that keep data in
 * memory until it is stored (the run-event writer, the audit ledger) retry instead of dropping it. A statement error
 * (a constraint, bad SQL) is not retryable: it would fail again. No `pg` import: the SQLite path loads this too.
 */

/** SQLSTATEs of a lost or refused connection: class 08, and the server shutting down or not accepting yet. */
const CONNECTION_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);
/** Socket errors of the driver's connection. */
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH"]);
/** The driver's own words for a connection that ended or never came (it gives them no code). */
const DRIVER_MESSAGES = [
  "Connection terminated",
  "connection error and is not queryable",
  "Client was closed and is not queryable",
  "timeout exceeded when trying to connect",
  "terminating connection due to administrator command",
];

export function isPostgresConnectionError(err: unknown): boolean {
  if (!err || typeof err !== "object") return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string") {
    if (code.startsWith("08") && code.length === 5) return true;
    if (CONNECTION_SQLSTATES.has(code) || SOCKET_CODES.has(code)) return true;
  }
  const message = (err as { message?: unknown }).message;
  return typeof message === "string" && DRIVER_MESSAGES.some((m) => message.includes(m));
}
