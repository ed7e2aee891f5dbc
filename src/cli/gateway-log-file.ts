import fs from "node:fs";
import path from "node:path";

/**
 * The gateway's log file: the same lines it writes to stderr, appended to `<stateDir>/logs/gateway.log`, so a
 * gateway started in another terminal, by a service manager or in the background still has a log `loopgate logs`
 * can show. One old file is kept: past MAX_BYTES the file becomes gateway.log.1 and a new one starts.
 */
export const GATEWAY_LOG_MAX_BYTES = 10 * 1024 * 1024;

export function gatewayLogPath(stateDir: string): string {
  return path.join(stateDir, "logs", "gateway.log");
}

export interface LogFile {
  write(line: string): void;
  close(): Promise<void>;
}

/** Opens the log for appending (0600: a log names sessions and clients). A file that cannot be opened is skipped. */
export function openGatewayLogFile(file: string, maxBytes = GATEWAY_LOG_MAX_BYTES): LogFile | undefined {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  } catch {
    return undefined;
  }
  let size = 0;
  let stream: fs.WriteStream | undefined;
  const open = () => {
    try {
      size = fs.existsSync(file) ? fs.statSync(file).size : 0;
    } catch {
      size = 0;
    }
    stream = fs.createWriteStream(file, { flags: "a", mode: 0o600 });
    // a full disk or a removed directory must never take the gateway down: the stderr log still has every line
    stream.on("error", () => {
      stream = undefined;
    });
  };
  open();
  return {
    write(line) {
      if (!stream) return;
      const bytes = Buffer.byteLength(line) + 1;
      if (size > 0 && size + bytes > maxBytes) {
        const full = stream;
        stream = undefined;
        full.end();
        try {
          fs.renameSync(file, `${file}.1`);
        } catch {
          // keep appending to the same file rather than losing lines
        }
        open();
        if (!stream) return;
      }
      size += bytes;
      (stream as fs.WriteStream).write(`${line}\n`);
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (!stream) return resolve();
        stream.end(() => resolve());
      }),
  };
}
