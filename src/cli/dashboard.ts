import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { peekGatewayConfig } from "../config/peek.js";
import { resolveGatewayTarget } from "./agent-remote.js";
import { CliError, EXIT } from "./exit-codes.js";

export interface DashboardCliOptions {
  url?: string;
  config?: string;
  /** commander's --no-open */
  open?: boolean;
}

/** A gateway on loopback answers at once or not at all; a blackholed --url must not hang the command. */
const HEALTH_TIMEOUT_MS = 3000;

/**
 * `loopgate dashboard [--no-open]`: the running gateway's console URL (from --url, LOOPGATE_GATEWAY_URL /
 * LOOPGATE_GATEWAY_PORT or gateway.port), checked against the gateway's `/health` and `/`, printed, and opened
 * with xdg-open / open when one is on PATH.
 *
 * The token is never put in the URL, on a command line or in the opener's environment (a URL with a token lands in
 * the browser's history, argv is readable by every user of the machine): the console asks for it once per tab and
 * keeps it in that tab's session storage, so this only says where the token comes from.
 */
export async function runDashboard(opts: DashboardCliOptions, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { url: wsUrl, token } = resolveGatewayTarget({ url: opts.url, config: opts.config }, env);
  const httpBase = wsUrl.replace(/^ws/, "http").replace(/\/+$/, "");
  const consoleUrl = `${httpBase}/`;
  await requireConsole(httpBase);
  process.stdout.write(`console: ${consoleUrl}\n`);
  process.stdout.write(`${tokenHint(token, opts.config, env)}\n`);
  if (opts.open === false) return EXIT.ok;
  const opener = findOpener(env);
  if (!opener) {
    process.stdout.write("(no xdg-open or open on PATH: open the URL in a browser)\n");
    return EXIT.ok;
  }
  const child = spawn(opener, [consoleUrl], { detached: true, stdio: "ignore", env: openerEnv(env) });
  child.on("error", (err) => process.stderr.write(`could not run ${opener}: ${err.message}\n`));
  child.unref();
  process.stdout.write(`opened with ${path.basename(opener)}\n`);
  return EXIT.ok;
}

async function requireConsole(httpBase: string): Promise<void> {
  const get = async (p: string) => {
    const res = await fetch(`${httpBase}${p}`, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) });
    await res.body?.cancel();
    return res.status;
  };
  try {
    await get("/health");
  } catch (err) {
    throw new CliError(
      `no gateway answers at ${httpBase} (${reason(err)}): start it with \`loopgate gateway\`, or name it with --url`,
      // as every client command says it (agent-remote.ts connectGateway)
      EXIT.usage,
    );
  }
  if ((await get("/")) !== 200) {
    throw new CliError(
      `the gateway at ${httpBase} serves no console (a build without dist/console: run npm run build)`,
      EXIT.runError,
    );
  }
}

/** fetch's "fetch failed" hides the useful part (ECONNREFUSED …) in its cause */
function reason(err: unknown): string {
  const e = err as Error & { cause?: { message?: string } };
  return e.cause?.message ?? e.message;
}

function tokenHint(token: string | undefined, configPath: string | undefined, env: NodeJS.ProcessEnv): string {
  if (env.LOOPGATE_GATEWAY_TOKEN) return "token: the console asks for it once per tab: use LOOPGATE_GATEWAY_TOKEN";
  if (token) {
    const { file } = peekGatewayConfig({ configPath, env });
    return `token: the console asks for it once per tab: use gateway.auth.token from ${file}`;
  }
  return "token: none configured here: leave the console's token field empty (a gateway started with --token or --token-file wants that one)";
}

/** xdg-open (Linux, BSD) or open (macOS), found on PATH. */
function findOpener(env: NodeJS.ProcessEnv): string | undefined {
  const names = process.platform === "darwin" ? ["open"] : ["xdg-open"];
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    for (const name of names) {
      const candidate = path.join(dir, name);
      try {
        fs.accessSync(candidate, fs.constants.X_OK);
        return candidate;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

/** The opener's environment: the desktop session's, without Loopgate's variables or anything named like a secret. */
function openerEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(env).filter(
      ([k]) => !k.startsWith("LOOPGATE_") && !k.startsWith("OPENCLAW_") && !/TOKEN|KEY|SECRET|PASSWORD/i.test(k),
    ),
  );
}
