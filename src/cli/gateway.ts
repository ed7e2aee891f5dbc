import { loadConfig, resolveSecretRef } from "../config/index.js";
import { locateConfigFile } from "../config/source.js";
import { isLoopbackHost, resolveBindHost } from "../gateway/bind.js";
import { describeStorage } from "../storage/describe-storage.js";
import { CliError, EXIT } from "./exit-codes.js";
import { gatewayLogPath, openGatewayLogFile } from "./gateway-log-file.js";
import { createGatewayLogger, type GatewayLogFlags } from "./gateway-logging.js";
import { resolveGatewayToken, tokenFlagWarning } from "./gateway-token.js";

export interface GatewayCliOptions extends GatewayLogFlags {
  port?: string;
  bind?: string;
  token?: string;
  tokenFile?: string;
  config?: string;
}

function parsePort(raw: string, source: string): number {
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isInteger(n) || n < 0 || n > 65535) {
    throw new CliError(`${source}: expected a port number 0-65535, got "${raw}"`);
  }
  return n;
}

/** `--port` > `LOOPGATE_GATEWAY_PORT` > `gateway.port` (default 18789). */
export function resolveGatewayPort(flag: string | undefined, env: NodeJS.ProcessEnv, configPort: number): number {
  if (flag !== undefined) return parsePort(flag, "--port");
  const fromEnv = env.LOOPGATE_GATEWAY_PORT;
  if (fromEnv !== undefined && fromEnv.trim() !== "") return parsePort(fromEnv, "LOOPGATE_GATEWAY_PORT");
  return configPort;
}

/**
 * `loopgate gateway`: serves until SIGINT/SIGTERM, then drains (running runs get gateway.shutdownGraceMs, new ones
 * are refused as retryable, clients get a `shutdown` event) and exits 0. The first stdout line carries the URL.
 */
export async function runGatewayCli(opts: GatewayCliOptions): Promise<number> {
  const loaded = loadConfig({ configPath: opts.config });
  const logPath = gatewayLogPath(loaded.stateDir);
  const logFile = openGatewayLogFile(logPath);
  const logger = createGatewayLogger(opts, process.env, logFile);
  const gcfg = loaded.config.gateway;
  const port = resolveGatewayPort(opts.port, process.env, gcfg.port);
  const bind = opts.bind ?? gcfg.bind;
  const host = resolveBindHost(bind);
  const token = resolveGatewayToken({
    flag: opts.token,
    file: opts.tokenFile,
    env: process.env,
    config: resolveSecretRef(gcfg.auth.token, "gateway.auth.token"),
  });
  if (!isLoopbackHost(host) && !token && gcfg.auth.tokens.length === 0) {
    throw new CliError(
      `refusing to bind ${host} (--bind ${bind}) without authentication: set gateway.auth.token (or gateway.auth.tokens)${loaded.file ? ` in ${loaded.file}` : ""}, set LOOPGATE_GATEWAY_TOKEN, or pass --token-file PATH (or --token)`,
    );
  }
  if (opts.token && !isLoopbackHost(host)) process.stderr.write(`${tokenFlagWarning(host)}\n`);
  // Signals are caught from here on: a SIGTERM that lands while the gateway is still starting (a supervisor
  // restarting it) must still drain and exit 0, not kill the process by the default action.
  let stopSignal: NodeJS.Signals | undefined;
  let onStop: ((signal: NodeJS.Signals) => void) | undefined;
  const stop = (signal: NodeJS.Signals) => {
    if (stopSignal) {
      logger.warn(`${signal} again, exiting without waiting for runs`);
      process.exit(EXIT.interrupted);
    }
    stopSignal = signal;
    onStop?.(signal);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  // SIGHUP reloads the config file (in every reload mode: it is the operator asking); a bad file is logged and
  // ignored. Caught from here on too: by default it would end the process
  let reload: ((reason: string) => void) | undefined;
  const onHangup = () => reload?.("SIGHUP");
  process.on("SIGHUP", onHangup);
  const removeSignalHandlers = () => {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    process.off("SIGHUP", onHangup);
  };

  const { startGateway } = await import("../gateway/server.js");
  let handle: Awaited<ReturnType<typeof startGateway>>;
  try {
    handle = await startGateway({
      config: loaded.config,
      stateDir: loaded.stateDir,
      port,
      host,
      token,
      logger,
      // watched and reloaded (SPEC 26); written by config.patch: the file the config came from, or where it would be
      configFile: loaded.file ?? locateConfigFile({ configPath: opts.config, env: process.env }).file,
    });
    // the banner comes once plugins are loaded and gateway_start has fired (the gateway fires it itself)
    await handle.ready;
  } catch (err) {
    removeSignalHandlers();
    if ((err as Error)?.name === "GatewayStartError") throw new CliError((err as Error).message);
    throw err;
  }
  reload = (reason) => void handle.reloadConfig(reason);
  const httpBase = handle.url.replace(/^ws:/, "http:");
  process.stdout.write(`loopgate gateway listening on ${handle.url} (health: ${httpBase}/health)\n`);
  process.stdout.write(
    `state: ${loaded.stateDir} · storage: ${describeStorage(loaded.config, loaded.stateDir)} · config: ${loaded.file ?? "defaults (no config file)"}\n`,
  );
  process.stdout.write(`log: ${logFile ? logPath : "stderr only"} (loopgate logs -f)\n`);
  process.stdout.write(token ? "auth: clients must present the gateway token\n" : "auth: none (loopback only)\n");
  if (handle.consoleUrl) process.stdout.write(`console: ${handle.consoleUrl}\n`);

  await new Promise<void>((resolve) => {
    onStop = (signal) => {
      logger.info(`${signal}, draining`, { graceMs: gcfg.shutdownGraceMs });
      handle.close(`${signal}: gateway stopping`).then(resolve, (err) => {
        logger.error("shutdown failed", { error: (err as Error)?.message ?? String(err) });
        resolve();
      });
    };
    if (stopSignal) onStop(stopSignal);
  });
  removeSignalHandlers();
  logger.info("stopped");
  await logFile?.close();
  // Everything the gateway opened is closed; a handle left by a provider SDK must not keep the process alive.
  setTimeout(() => process.exit(EXIT.ok), 1000).unref();
  return EXIT.ok;
}
