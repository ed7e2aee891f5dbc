import { randomUUID } from "node:crypto";
import { prepareAttachments } from "../agent/attachments.js";
import type { ExecPrompt } from "../agent/exec-approvals.js";
import type { AgentFinal, AgentRequest, AgentService } from "../agent/service.js";
import { loadConfigCached } from "../config/cached.js";
import type { LoadedConfig } from "../config/load.js";
import type { AgentEvent } from "../infra/events.js";
import { createLogger } from "../infra/logger.js";
import { composeNode, NodeRoleError } from "../node/compose.js";
import { terminalExecPrompt } from "./exec-prompt.js";
import { CliError, EXIT } from "./exit-codes.js";

/**
 * Opens config, store and runtime for an embedded (in-process) run. The user runs their own agent here, so exec's
 * security defaults to "full" (tools.exec.security overrides it), and approvals are asked on the terminal.
 */
export async function openLocal(opts: {
  configPath?: string;
  loaded?: LoadedConfig;
  execPrompt?: ExecPrompt;
}): Promise<{
  service: AgentService;
  loaded: LoadedConfig;
  close: () => Promise<void>;
}> {
  const loaded = opts.loaded ?? (await loadConfigCached({ configPath: opts.configPath }));
  try {
    // an embedded run is audited like a gateway run (actor "cli"); the gateway prunes the ledger
    const node = await composeNode({
      role: "embedded",
      config: loaded.config,
      stateDir: loaded.stateDir,
      logger: createLogger(),
      execSecurityDefault: "full",
      execPrompt:
        opts.execPrompt ??
        terminalExecPrompt({ input: process.stdin, output: process.stderr, interactive: process.stdin.isTTY === true }),
    });
    await node.start();
    return { service: node.service, loaded, close: () => node.close() };
  } catch (err) {
    // refused before anything was opened: a usage problem, said with the command it concerns
    if (err instanceof NodeRoleError) throw new CliError(`loopgate agent --local: ${err.message}`, EXIT.usage);
    throw err;
  }
}

/**
 * Runs one turn embedded in this process. `onEvent` sees every event of the run; `signal` aborts it (Ctrl-C).
 * Resolves once the run has ended and its record is written.
 */
export async function runLocalTurn(
  service: AgentService,
  req: Omit<AgentRequest, "idempotencyKey"> & { idempotencyKey?: string },
  onEvent: (ev: AgentEvent) => void,
  signal?: AbortSignal,
): Promise<AgentFinal> {
  const runId = req.idempotencyKey ?? randomUUID();
  // the run executes in this process: nothing from other nodes is wanted (nor paid for)
  const unsubscribe = service.rt.bus.subscribeLocal((ev) => {
    if (ev.runId === runId) onEvent(ev);
  });
  try {
    // the same intake as the gateway's: images scaled and text files inlined before the durable accept
    const accepted = await service.accept(await prepareAttachments({ ...req, idempotencyKey: runId }), {
      actor: "cli",
    });
    const onAbort = () => service.abort(accepted.sessionKey, runId);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      return await service.final(runId);
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  } finally {
    unsubscribe();
  }
}
