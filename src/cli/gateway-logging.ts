import {
  createLogger,
  isLogFormat,
  LOG_FORMATS,
  type LogFormat,
  type Logger,
  type LogLevel,
  logLevelFromEnv,
} from "../infra/logger.js";
import { CliError } from "./exit-codes.js";
import type { LogFile } from "./gateway-log-file.js";

export interface GatewayLogFlags {
  verbose?: boolean;
  logFormat?: string;
}

export interface GatewayLogSettings {
  level: LogLevel;
  format: LogFormat;
  /** problems with the environment, to be logged once the logger exists (they do not stop the gateway) */
  warnings: string[];
}

/**
 * `--verbose` (debug) > `LOOPGATE_LOG_LEVEL` > info; `--log-format` > `LOOPGATE_LOG_FORMAT` > text. A bad flag is a
 * usage error; a bad environment value only warns, so a stale variable in a service unit cannot stop the gateway.
 */
export function resolveGatewayLogging(flags: GatewayLogFlags, env: NodeJS.ProcessEnv): GatewayLogSettings {
  const warnings: string[] = [];
  if (flags.logFormat !== undefined && !isLogFormat(flags.logFormat)) {
    throw new CliError(`--log-format: expected ${LOG_FORMATS.join(" or ")}, got "${flags.logFormat}"`);
  }
  let format: LogFormat = "text";
  const envFormat = env.LOOPGATE_LOG_FORMAT?.trim().toLowerCase();
  if (flags.logFormat !== undefined) format = flags.logFormat as LogFormat;
  else if (envFormat && isLogFormat(envFormat)) format = envFormat;
  else if (envFormat) {
    warnings.push(
      `LOOPGATE_LOG_FORMAT: expected ${LOG_FORMATS.join(" or ")}, got "${env.LOOPGATE_LOG_FORMAT}"; using "text"`,
    );
  }
  const fromEnv = logLevelFromEnv(env, "info", (message) => warnings.push(message));
  return { level: flags.verbose ? "debug" : fromEnv, format, warnings };
}

/**
 * The gateway's logger on stderr (stdout carries only the listening lines) and, when given, the same lines in a log
 * file (gateway-log-file.ts), with the setup warnings logged.
 */
export function createGatewayLogger(flags: GatewayLogFlags, env: NodeJS.ProcessEnv, file?: LogFile): Logger {
  const settings = resolveGatewayLogging(flags, env);
  const logger = createLogger({
    level: settings.level,
    format: settings.format,
    write: (line) => {
      process.stderr.write(`${line}\n`);
      file?.write(line);
    },
  });
  for (const warning of settings.warnings) logger.warn(warning);
  return logger;
}
