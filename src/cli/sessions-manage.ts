import { GatewayRequestError } from "../client/errors.js";
import { loadConfig } from "../config/index.js";
import { createLogger } from "../infra/logger.js";
import { composeNode } from "../node/compose.js";
import { normalizeSessionKey } from "../session/keys.js";
import { UnknownSessionError } from "../session/lifecycle.js";
import { connectGateway, resolveGatewayTarget } from "./agent-remote.js";
import { CliError, EXIT } from "./exit-codes.js";

export interface SessionsManageOptions {
  local?: boolean;
  config?: string;
  url?: string;
  token?: string;
}

type Action = "reset" | "delete";

const SOURCE = { reset: "cli:sessions reset", delete: "cli:sessions delete" } as const;

/**
 * `loopgate sessions reset|delete <key>`: through the running gateway by default (sessions.reset / sessions.delete,
 * operator.admin: it refuses while the session runs, and its clients hear the change), or with --local straight on
 * the state dir through the same session-lifecycle service (same session lock, same hooks).
 */
export async function runSessionsManage(action: Action, key: string, opts: SessionsManageOptions): Promise<number> {
  const line = opts.local ? await manageLocally(action, key, opts) : await manageThroughGateway(action, key, opts);
  process.stdout.write(`${line}\n`);
  return EXIT.ok;
}

async function manageThroughGateway(action: Action, key: string, opts: SessionsManageOptions): Promise<string> {
  const { url, token } = resolveGatewayTarget(opts);
  const client = await connectGateway(url, token, ["operator.admin"], "or change the state dir directly with --local");
  try {
    if (action === "reset") {
      const r = await client.request<{ key: string; generation: number }>("sessions.reset", { key });
      return `reset ${r.key}: transcript generation ${r.generation} starts empty (the old rows are kept)`;
    }
    const r = await client.request<{ key: string; deleted: boolean }>("sessions.delete", { key });
    if (!r.deleted) throw new CliError(`no session "${r.key}" (see: loopgate sessions list)`, EXIT.runError);
    return `deleted ${r.key}`;
  } catch (err) {
    if (err instanceof GatewayRequestError) {
      const usage = ["invalid_params", "invalid_request", "unauthorized", "forbidden"].includes(err.code);
      throw new CliError(`sessions ${action}: ${err.message}`, usage ? EXIT.usage : EXIT.runError);
    }
    throw err;
  } finally {
    await client.close();
  }
}

async function manageLocally(action: Action, key: string, opts: SessionsManageOptions): Promise<string> {
  const loaded = loadConfig({ configPath: opts.config });
  const node = await composeNode({
    role: "command",
    config: loaded.config,
    stateDir: loaded.stateDir,
    logger: createLogger(),
  });
  try {
    const rt = node.runtime;
    // the plugins' session_end / session_start hooks and the internal command hooks fire as on the gateway
    await rt.init();
    const normalized = normalizeSessionKey(key, rt.defaultAgentId).key;
    if (action === "reset") {
      const { generation } = await node.service.sessions.reset(normalized, {
        reason: "reset",
        marker: "loopgate sessions reset",
        command: { args: "", source: SOURCE.reset },
      });
      return `reset ${normalized}: transcript generation ${generation} starts empty (the old rows are kept)`;
    }
    if (!(await node.service.sessions.delete(normalized))) {
      throw new CliError(`no session "${normalized}" (see: loopgate sessions list)`, EXIT.runError);
    }
    return `deleted ${normalized}`;
  } catch (err) {
    if (err instanceof UnknownSessionError) {
      throw new CliError(`no session "${err.sessionKey}" (see: loopgate sessions list)`, EXIT.runError);
    }
    throw err;
  } finally {
    await node.close();
  }
}
