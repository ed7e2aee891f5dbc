import { randomUUID } from "node:crypto";
import { prepareAttachments } from "../agent/attachments.js";
import type { ExecPrompt } from "../agent/exec-approvals.js";
import { AgentRuntime } from "../agent/runtime.js";
import { type AgentFinal, type AgentRequest, AgentService } from "../agent/service.js";
import { loadConfigCached } from "../config/cached.js";
import type { LoadedConfig } from "../config/load.js";
import { AuditLedger } from "../events/audit-ledger.js";
import type { AgentEvent } from "../infra/events.js";
import { createLogger } from "../infra/logger.js";
import { createStore } from "../storage/create-store.js";
import { startMcp } from "../tools/mcp/start.js";
import { mcpRuntimeOptions } from "../tools/mcp/tool-source.js";
import { terminalExecPrompt } from "./exec-prompt.js";

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
  const store = await createStore(loaded.config, loaded.stateDir);
  const mcp = await startMcp(loaded.config, { logger: createLogger(), settle: true });
  const rt = new AgentRuntime({
    config: loaded.config,
    stateDir: loaded.stateDir,
    store,
    logger: createLogger(),
    execSecurityDefault: "full",
    execPrompt:
      opts.execPrompt ??
      terminalExecPrompt({ input: process.stdin, output: process.stderr, interactive: process.stdin.isTTY === true }),
    ...mcpRuntimeOptions(mcp, loaded.config),
  });
  const service = new AgentService(rt);
  // an embedded run is audited like a gateway run (actor "cli"); the gateway prunes the ledger
  const audit = new AuditLedger({
    store,
    clock: rt.clock,
    logger: rt.logger,
    queueSize: loaded.config.audit.queueSize,
    actorOf: (runId) => service.originOf(runId)?.actor,
  });
  audit.attach(rt.bus);
  return {
    service,
    loaded,
    close: async () => {
      await audit.close();
      // the run events still buffered go to the store before it closes
      await rt.runEvents.close();
      await store.close();
      await mcp?.close();
    },
  };
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
