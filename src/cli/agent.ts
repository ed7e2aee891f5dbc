import { thinkingLevels } from "../config/constants.js";
import type { AgentEvent } from "../infra/events.js";
import type { AgentFinal } from "../protocol/run.js";
import type { ThinkingLevel } from "../providers/types.js";
import { CliError, EXIT } from "./exit-codes.js";
import { createTerminalRenderer, formatSummary } from "./render.js";

export interface AgentCliOptions {
  message?: string;
  local?: boolean;
  sessionKey?: string;
  agent?: string;
  model?: string;
  thinking?: string;
  timeout?: string;
  json?: boolean;
  config?: string;
  url?: string;
  token?: string;
}

export function exitCodeFor(final: AgentFinal, interrupted: boolean): number {
  if (interrupted || final.summary === "aborted") return EXIT.interrupted;
  if (final.status === "ok") return EXIT.ok;
  if (final.status === "timeout") return EXIT.timeout;
  return EXIT.runError;
}

export function parseAgentOptions(opts: AgentCliOptions) {
  if (!opts.message?.trim()) throw new CliError("--message is required (the text to send)");
  let timeout: number | undefined;
  if (opts.timeout !== undefined) {
    timeout = Number(opts.timeout);
    if (!Number.isInteger(timeout) || timeout < 0) {
      throw new CliError(`--timeout: expected whole seconds (0 = unlimited), got "${opts.timeout}"`);
    }
  }
  if (opts.thinking !== undefined && !(thinkingLevels as readonly string[]).includes(opts.thinking)) {
    throw new CliError(`--thinking: expected one of ${thinkingLevels.join(", ")}, got "${opts.thinking}"`);
  }
  if (opts.model !== undefined && !/^[^/\s]+\/\S+$/.test(opts.model)) {
    throw new CliError(`--model: expected "<provider>/<model>", got "${opts.model}"`);
  }
  return {
    message: opts.message,
    sessionKey: opts.sessionKey,
    agentId: opts.agent,
    model: opts.model,
    thinking: opts.thinking as ThinkingLevel | undefined,
    timeout,
  };
}

/** Output for one run, shared by the embedded and the gateway path. */
export function createRunOutput(json: boolean) {
  const color = !json && process.stdout.isTTY === true && !process.env.NO_COLOR;
  const render = json
    ? (ev: AgentEvent) => process.stdout.write(`${JSON.stringify({ type: "event", ...ev })}\n`)
    : createTerminalRenderer({
        out: (s) => process.stdout.write(s),
        err: (s) => process.stderr.write(s),
        color,
      });
  const finish = (final: AgentFinal) => {
    if (json) process.stdout.write(`${JSON.stringify({ type: "result", ...final })}\n`);
    else {
      const visible = final.result.payloads.filter((p) => p.kind === "error");
      for (const p of visible) process.stdout.write(`${p.text}\n`);
      process.stderr.write(`${formatSummary(final)}\n`);
    }
  };
  return { render, finish };
}

/** Ctrl-C aborts the run cleanly (the run records itself as aborted); a second Ctrl-C exits at once. */
export function interruptController(): { signal: AbortSignal; interrupted: () => boolean; dispose: () => void } {
  const controller = new AbortController();
  let count = 0;
  const onSigint = () => {
    count++;
    if (count === 1) {
      process.stderr.write("\n(interrupting; press Ctrl-C again to force)\n");
      controller.abort(new Error("interrupted"));
    } else process.exit(EXIT.interrupted);
  };
  process.on("SIGINT", onSigint);
  return {
    signal: controller.signal,
    interrupted: () => count > 0,
    dispose: () => process.off("SIGINT", onSigint),
  };
}

export async function runAgentLocal(opts: AgentCliOptions): Promise<number> {
  const parsed = parseAgentOptions(opts);
  const { openLocal, runLocalTurn } = await import("./local.js");
  const local = await openLocal({ configPath: opts.config });
  try {
    // A model that cannot be resolved is a usage/config error (exit 2), not a failed run.
    const rt = local.service.rt;
    rt.resolveModel(parsed.model ?? rt.agentModelRef(parsed.agentId ?? "main"));
  } catch (err) {
    local.close();
    throw new CliError((err as Error).message);
  }
  const out = createRunOutput(opts.json === true);
  const intr = interruptController();
  try {
    const final = await runLocalTurn(local.service, parsed, out.render, intr.signal);
    out.finish(final);
    return exitCodeFor(final, intr.interrupted());
  } finally {
    intr.dispose();
    local.close();
  }
}
