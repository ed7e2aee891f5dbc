import { randomUUID } from "node:crypto";
import { GatewayConnectError, GatewayRequestError } from "../client/errors.js";
import { GatewayClient } from "../client/gateway-client.js";
import { peekGatewayConfig } from "../config/peek.js";
import { resolveSecretRef } from "../config/secret-ref.js";
import type { AgentAccepted } from "../protocol/payloads.js";
import { type AgentCliOptions, parseAgentOptions, runOutputWithInterrupt } from "./agent.js";
import { CliError, EXIT } from "./exit-codes.js";
import { exitCodeFor } from "./run-output.js";

/**
 * Where the gateway is and how to authenticate: `--url` > LOOPGATE_GATEWAY_URL > ws://127.0.0.1:<port>
 * (LOOPGATE_GATEWAY_PORT > gateway.port); `--token` > LOOPGATE_GATEWAY_TOKEN > gateway.auth.token.
 * The config is read only when a flag or variable leaves something open.
 */
export function resolveGatewayTarget(
  opts: Pick<AgentCliOptions, "url" | "token" | "config">,
  env: NodeJS.ProcessEnv = process.env,
): { url: string; token?: string } {
  let url = opts.url || env.LOOPGATE_GATEWAY_URL || undefined;
  let token = opts.token || env.LOOPGATE_GATEWAY_TOKEN || undefined;
  if (url === undefined || token === undefined) {
    const peeked = peekGatewayConfig({ configPath: opts.config, env });
    if (url === undefined) {
      const envPort = env.LOOPGATE_GATEWAY_PORT?.trim();
      url = `ws://127.0.0.1:${envPort || peeked.port || 18789}`;
    }
    token ??= resolveSecretRef(peeked.token, "gateway.auth.token", env);
  }
  if (!/^wss?:\/\//.test(url)) throw new CliError(`--url: expected a ws:// or wss:// URL, got "${url}"`);
  return { url, token };
}

/** Connecting to loopback either works at once or not at all; a blackholed host must not hang the CLI. */
const CONNECT_TIMEOUT_MS = 3000;

/**
 * Connects as the CLI; no gateway (or a refused connection) is one line with a hint and exit 2. `localHint` is what
 * the command offers instead of a gateway (e.g. "or run embedded with --local"); only commands that have a --local
 * pass one, so the hint never names a flag the command does not take.
 */
export async function connectGateway(
  url: string,
  token: string | undefined,
  scopes: string[],
  localHint?: string,
): Promise<GatewayClient> {
  try {
    return await GatewayClient.connect({
      url,
      token,
      client: { id: "cli", mode: "cli" },
      scopes,
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
    });
  } catch (err) {
    if (err instanceof GatewayConnectError) {
      throw new CliError(
        `no gateway reachable at ${url}: start one with \`loopgate gateway\`, or name a running one with --url (or LOOPGATE_GATEWAY_URL)${localHint ? `; ${localHint}` : ""}`,
        EXIT.usage,
      );
    }
    if (err instanceof GatewayRequestError) {
      throw new CliError(`the gateway at ${url} refused the connection: ${err.message}`, EXIT.usage);
    }
    throw err;
  }
}

/**
 * One connection for a command's calls; a refusal of the gateway is said in the user's terms: a bad param, an
 * unknown id, a conflict or a missing scope is the user's to fix (exit 2), anything else a failure of the call.
 */
export async function withGateway<T>(
  opts: { url?: string; token?: string; config?: string },
  scopes: string[],
  fn: (call: <R>(method: string, params: unknown) => Promise<R>) => Promise<T>,
): Promise<T> {
  const { url, token } = resolveGatewayTarget(opts);
  const client = await connectGateway(url, token, scopes);
  try {
    return await fn((method, params) => client.request(method, params));
  } catch (err) {
    if (!(err instanceof GatewayRequestError)) throw err;
    const usage = ["invalid_params", "not_found", "conflict", "forbidden", "unauthorized"].includes(err.code);
    throw new CliError(`${err.method}: ${err.message}`, usage ? EXIT.usage : EXIT.runError);
  } finally {
    await client.close();
  }
}

/**
 * How to answer an approval the run waits for: the console's Approvals page on the gateway's own HTTP port (the
 * console has no page per approval; the id rides in the route for the reader), and the CLI commands, carrying the
 * --url given here (a --token is not repeated: it would put the secret on the screen).
 */
export function approvalHelp(url: string, id: string, opts: Pick<AgentCliOptions, "url">): string[] {
  return [`answer in the console: ${consoleApprovalUrl(url, id)}`, ...cliAnswer(id, opts)];
}

/** The console serves `/` on the gateway's port; user info and a query (which may carry a secret) are dropped. */
export function consoleApprovalUrl(gatewayUrl: string, id: string): string {
  const u = new URL(gatewayUrl);
  const http = u.protocol === "wss:" ? "https:" : "http:";
  return `${http}//${u.host}/#/approvals/${encodeURIComponent(id)}`;
}

function withoutSecrets(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname === "/" ? "" : u.pathname}`;
}

function cliAnswer(id: string, opts: Pick<AgentCliOptions, "url">): string[] {
  // the URL as given, less any user info or query (a secret must not be echoed onto the screen)
  const target = opts.url ? ` --url ${withoutSecrets(opts.url)}` : "";
  return [`or here: loopgate approvals allow ${id}${target}`, `     (or: loopgate approvals deny ${id}${target})`];
}

/** `loopgate agent` without --local: the same turn, through a running gateway, rendered exactly like --local. */
export async function runAgentRemote(opts: AgentCliOptions): Promise<number> {
  const parsed = parseAgentOptions(opts);
  const { url, token } = resolveGatewayTarget(opts);
  // write scope only: the CLI needs its own run's events, not every session's (no fan-out of others' events)
  const client = await connectGateway(url, token, ["operator.write"], "or run embedded with --local");

  const runId = randomUUID();
  const { out, intr } = runOutputWithInterrupt(opts, "aborted by the gateway", false, (id) =>
    approvalHelp(url, id, opts),
  );
  let accepted: AgentAccepted | undefined;
  let abortSent = false;
  const sendAbort = () => {
    if (abortSent || !accepted) return;
    abortSent = true;
    client.request("chat.abort", { sessionKey: accepted.sessionKey, runId }).catch(() => {
      // the final (or the closed connection) tells the rest
    });
  };
  // Ctrl-C aborts the run on the gateway; the run records itself as aborted and the final still arrives.
  intr.signal.addEventListener("abort", sendAbort, { once: true });
  try {
    const final = await client.agent(
      {
        message: parsed.message,
        ...(parsed.attachments ? { attachments: parsed.attachments } : {}),
        idempotencyKey: runId,
        ...(parsed.sessionKey !== undefined ? { sessionKey: parsed.sessionKey } : {}),
        ...(parsed.agentId !== undefined ? { agentId: parsed.agentId } : {}),
        ...(parsed.model !== undefined ? { model: parsed.model } : {}),
        ...(parsed.thinking !== undefined ? { thinking: parsed.thinking } : {}),
        ...(parsed.reasoningLevel !== undefined ? { reasoningLevel: parsed.reasoningLevel } : {}),
        ...(parsed.verboseLevel !== undefined ? { verboseLevel: parsed.verboseLevel } : {}),
        ...(parsed.timeout !== undefined ? { timeout: parsed.timeout } : {}),
        ...(parsed.blockStreaming !== undefined ? { blockStreaming: parsed.blockStreaming } : {}),
        ...(parsed.authProfile !== undefined ? { authProfile: parsed.authProfile } : {}),
      },
      {
        onAccepted: (a) => {
          accepted = a;
          if (intr.signal.aborted) sendAbort();
        },
        onEvent: out.render,
      },
    );
    out.finish(final);
    return exitCodeFor(final, intr.interrupted());
  } catch (err) {
    if (err instanceof GatewayRequestError) {
      const usage = ["invalid_params", "invalid_request", "unauthorized", "unknown_method"].includes(err.code);
      const suffix = err.code === "connection_closed" ? ` (run ${runId} may still be running on the gateway)` : "";
      throw new CliError(`${err.message}${suffix}`, usage ? EXIT.usage : EXIT.runError);
    }
    throw err;
  } finally {
    out.dispose();
    intr.dispose();
    await client.close();
  }
}
