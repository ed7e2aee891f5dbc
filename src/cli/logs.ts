import fs from "node:fs";
import { loadConfig } from "../config/index.js";
import { CliError, EXIT } from "./exit-codes.js";
import { gatewayLogPath } from "./gateway-log-file.js";

export interface LogsCliOptions {
  config?: string;
  lines?: string;
  follow?: boolean;
}

/** How often -f looks for new lines: a log is read by a person, a quarter second is soon enough. */
const FOLLOW_POLL_MS = 250;

function parseLines(raw: string | undefined): number {
  if (raw === undefined) return 50;
  if (!/^\d+$/.test(raw.trim())) throw new CliError(`-n/--lines: expected a whole number (0 or more), got "${raw}"`);
  return Number(raw);
}

/** The last `n` lines of `file` (the whole file is read: it is capped at GATEWAY_LOG_MAX_BYTES). */
function lastLines(file: string, n: number): string {
  if (n === 0) return "";
  const lines = fs.readFileSync(file, "utf8").split("\n");
  if (lines.at(-1) === "") lines.pop();
  const tail = lines.slice(-n);
  return tail.length ? `${tail.join("\n")}\n` : "";
}

/**
 * `loopgate logs`: the gateway's log file of this state dir (<stateDir>/logs/gateway.log, written by `loopgate
 * gateway` beside its stderr). Prints the last lines; with -f keeps printing what is appended, across a rotation,
 * until Ctrl-C.
 */
export async function runLogs(opts: LogsCliOptions): Promise<number> {
  const n = parseLines(opts.lines);
  const { stateDir } = loadConfig({ configPath: opts.config });
  const file = gatewayLogPath(stateDir);
  if (!fs.existsSync(file)) {
    if (!opts.follow) {
      throw new CliError(
        `no gateway log at ${file} yet: \`loopgate gateway\` writes it (with this state dir) while it runs`,
        EXIT.runError,
      );
    }
    process.stderr.write(`(no gateway log at ${file} yet; waiting for one)\n`);
  } else {
    process.stdout.write(lastLines(file, n));
  }
  if (!opts.follow) return EXIT.ok;
  let offset = fs.existsSync(file) ? fs.statSync(file).size : 0;
  await new Promise<void>(() => {
    setInterval(() => {
      let size: number;
      try {
        size = fs.statSync(file).size;
      } catch {
        return; // rotated away for a moment, or not there yet
      }
      // smaller than what was read: the file was rotated (gateway.log.1) and this is a new one
      if (size < offset) offset = 0;
      if (size === offset) return;
      const fd = fs.openSync(file, "r");
      try {
        const buf = Buffer.alloc(size - offset);
        fs.readSync(fd, buf, 0, buf.length, offset);
        offset = size;
        process.stdout.write(buf);
      } finally {
        fs.closeSync(fd);
      }
    }, FOLLOW_POLL_MS);
  });
  return EXIT.ok;
}
