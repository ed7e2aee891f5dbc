import { ConfigError } from "./errors.js";
import { parseJson5Text } from "./json5-text.js";
import { locateConfigFile, readConfigText } from "./source.js";

/**
 * The gateway client needs two values from the config (gateway.port, gateway.auth.token). Reading them without the
 * schema keeps `loopgate agent` (through a gateway) from paying for loading and building the full config schema;
 * the gateway itself validates the whole file when it starts.
 */
export function peekGatewayConfig(opts: { configPath?: string; env?: NodeJS.ProcessEnv } = {}): {
  port?: number;
  token?: string;
  file: string;
} {
  const { file, explicit } = locateConfigFile(opts);
  let raw: unknown;
  try {
    raw = parseJson5Text(readConfigText(file));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" && !explicit) return { file };
    if (err instanceof ConfigError) throw err;
    throw new Error(`cannot read config ${file}: ${(err as Error).message}`);
  }
  const gateway = (raw as { gateway?: { port?: unknown; auth?: { token?: unknown } } } | null)?.gateway;
  const port = typeof gateway?.port === "number" ? gateway.port : undefined;
  const token = typeof gateway?.auth?.token === "string" ? gateway.auth.token : undefined;
  return { port, token, file };
}
