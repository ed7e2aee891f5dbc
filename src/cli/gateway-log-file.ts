import fs from "node:fs";
import path from "node:path";

/**
 * The gateway's log file: the same lines it writes to stderr, appended to `<stateDir>/logs/gateway.log`, so a
 * gateway started in another terminal, by a service manager or in the background still has a log `loopgate logs`
 * can show. One old file is kept: past MAX_BYTES the file becomes gateway.log.1 and a new one starts.
 */
export const GATEWAY_LOG_MAX_BYTES = 10 * 1024 * 1024;

export { gatewayLogPath } from "../infra/gateway-log-path.js";

export interface LogFile {
  write(line: string): void;
  close(): Promise<void>;
}

/**
 * Opens the log for appending (0600: a log names sessions and clients). A file that cannot be opened is skipped.
 * Lines are appended synchronously: the gateway logs a few lines per connection and run, and a line written before a
 * crash or a rotation is then on disk, in order, never in a stream's buffer aimed at a renamed file.
 */
export function openGatewayLogFile(file: string, maxBytes = GATEWAY_LOG_MAX_BYTES): LogFile | undefined {
  let fd: number | undefined;
  let size = 0;
  const open = () => {
    try {
      fd = fs.openSync(file, "a", 0o600);
      size = fs.fstatSync(fd).size;
    } catch {
      fd = undefined;
    }
  };
  const closeFd = () => {
    if (fd === undefined) return;
    try {
      fs.closeSync(fd);
    } catch {
      // already gone: nothing more to flush
    }
    fd = undefined;
  };
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  } catch {
    return undefined;
  }
  open();
  if (fd === undefined) return undefined;
  return {
    write(line) {
      const bytes = Buffer.from(`${line}\n`);
      if (fd !== undefined && size > 0 && size + bytes.length > maxBytes) {
        closeFd();
        try {
          fs.renameSync(file, `${file}.1`);
        } catch {
          // keep appending to the same file rather than losing lines
        }
        open();
      }
      if (fd === undefined) return;
      try {
        fs.writeSync(fd, bytes);
        size += bytes.length;
      } catch {
        // a full disk must never take the gateway down: the stderr log still has every line
      }
    },
    async close() {
      closeFd();
    },
  };
}
