import fs from "node:fs";
import path from "node:path";
import { isConfiguredAgent, unknownAgentMessage } from "../config/agents.js";
import { reasoningLevels, thinkingLevels, verboseLevels } from "../config/constants.js";
import type { LoopgateConfig } from "../config/schema.js";
import { CONTROL_CHARACTERS_MESSAGE, hasControlCharacter } from "../protocol/control-chars.js";
import type { ReasoningLevel, VerboseLevel } from "../protocol/enums.js";
import { ATTACHMENT_LIMITS } from "../protocol/limits.js";
import type { Attachment } from "../protocol/params.js";
import type { ThinkingLevel } from "../providers/types.js";
import { importCompiledEagerly } from "./eager-compile.js";
import { CliError } from "./exit-codes.js";
import { createRunOutput, exitCodeFor, interruptController } from "./run-output.js";

export interface AgentCliOptions {
  message?: string;
  /** --attach, once per file */
  attach?: string[];
  local?: boolean;
  sessionKey?: string;
  agent?: string;
  model?: string;
  thinking?: string;
  reasoning?: string;
  /** `--verbose` alone is true (= on) */
  verbose?: string | boolean;
  timeout?: string;
  blockStreaming?: string;
  /** --auth-profile: the auth profile ("provider:name") this run prefers while it is usable */
  authProfile?: string;
  json?: boolean;
  /** false after --no-color */
  color?: boolean;
  config?: string;
  url?: string;
  token?: string;
}

/** The --attach files as wire attachments (base64 content); a missing or unreadable file is a usage error. */
export function readAttachments(files: string[] | undefined): Attachment[] | undefined {
  if (!files || files.length === 0) return undefined;
  if (files.length > ATTACHMENT_LIMITS.maxCount) {
    throw new CliError(`--attach: at most ${ATTACHMENT_LIMITS.maxCount} files, got ${files.length}`);
  }
  return files.map((file) => {
    let bytes: Buffer;
    try {
      if (fs.statSync(file).size > ATTACHMENT_LIMITS.maxBytes) {
        throw new Error(`larger than ${ATTACHMENT_LIMITS.maxBytes / (1024 * 1024)} MiB`);
      }
      bytes = fs.readFileSync(file);
    } catch (err) {
      throw new CliError(
        `--attach ${file}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (err as Error).message}`,
      );
    }
    return { fileName: path.basename(file), content: bytes.toString("base64") };
  });
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
  if (opts.reasoning !== undefined && !(reasoningLevels as readonly string[]).includes(opts.reasoning)) {
    throw new CliError(`--reasoning: expected one of ${reasoningLevels.join(", ")}, got "${opts.reasoning}"`);
  }
  const verbose = opts.verbose === true ? "on" : opts.verbose === false ? undefined : opts.verbose;
  if (verbose !== undefined && !(verboseLevels as readonly string[]).includes(verbose)) {
    throw new CliError(`--verbose: expected one of ${verboseLevels.join(", ")}, got "${verbose}"`);
  }
  if (opts.blockStreaming !== undefined && opts.blockStreaming !== "on" && opts.blockStreaming !== "off") {
    throw new CliError(`--block-streaming: expected on or off, got "${opts.blockStreaming}"`);
  }
  // an alias or a bare id is resolved against the config (providers/model-choice.ts); here only its shape
  if (opts.model !== undefined && !/^\S+$/.test(opts.model)) {
    throw new CliError(`--model: expected "<provider>/<model>", an alias or a model id, got "${opts.model}"`);
  }
  if (opts.sessionKey !== undefined && hasControlCharacter(opts.sessionKey)) {
    throw new CliError(`--session-key: ${CONTROL_CHARACTERS_MESSAGE}`);
  }
  if (opts.authProfile !== undefined && !/^[^\s:]+:\S+$/.test(opts.authProfile)) {
    throw new CliError(`--auth-profile: expected an auth profile id "<provider>:<name>", got "${opts.authProfile}"`);
  }
  const attachments = readAttachments(opts.attach);
  return {
    message: opts.message,
    ...(attachments ? { attachments } : {}),
    sessionKey: opts.sessionKey,
    agentId: opts.agent,
    model: opts.model,
    thinking: opts.thinking as ThinkingLevel | undefined,
    reasoningLevel: opts.reasoning as ReasoningLevel | undefined,
    verboseLevel: verbose as VerboseLevel | undefined,
    timeout,
    blockStreaming: opts.blockStreaming as "on" | "off" | undefined,
    authProfile: opts.authProfile,
  };
}

/** A usage error (exit 2) naming the flag and listing the configured agents. */
export function requireConfiguredAgent(config: LoopgateConfig, id: string | undefined, flag: string): void {
  if (id !== undefined && !isConfiguredAgent(config, id))
    throw new CliError(`${flag}: ${unknownAgentMessage(config, id)}`);
}

export async function runAgentLocal(opts: AgentCliOptions): Promise<number> {
  const parsed = parseAgentOptions(opts);
  // the modules of the turn, compiled whole so the compile cache holds their functions (eager-compile.ts says why)
  const { openLocal, runLocalTurn, loadConfigCached, terminalExecPrompt, chooseModel } = await importCompiledEagerly(
    async () => ({
      ...(await import("./local.js")),
      ...(await import("../config/cached.js")),
      ...(await import("./exec-prompt.js")),
      ...(await import("../providers/model-choice.js")),
    }),
  );
  const loaded = await loadConfigCached({ configPath: opts.config });
  // before the store is opened: an unknown agent creates nothing (no state dir, session or workspace)
  requireConfiguredAgent(loaded.config, parsed.agentId, "--agent");
  // the question goes through the run's output, so it never mixes with the status line
  const execPrompt = terminalExecPrompt({
    input: process.stdin,
    output: { write: (s) => out.err(s) },
    interactive: process.stdin.isTTY === true,
  });
  const local = await openLocal({ loaded, execPrompt });
  try {
    // A model that cannot be resolved is a usage/config error (exit 2), not a failed run.
    const rt = local.service.rt;
    rt.resolveModel(
      parsed.model !== undefined
        ? chooseModel(rt.config, parsed.model)
        : rt.agentModelRef(parsed.agentId ?? rt.defaultAgentId),
    );
  } catch (err) {
    await local.close();
    const message = (err as Error).message;
    throw new CliError(parsed.model !== undefined ? `--model: ${message}` : message);
  }
  const { out, intr } = runOutputWithInterrupt(opts, "aborted", true);
  try {
    const final = await runLocalTurn(local.service, parsed, out.render, intr.signal);
    out.finish(final);
    return exitCodeFor(final, intr.interrupted());
  } finally {
    out.dispose();
    intr.dispose();
    await local.close();
  }
}

/** The run's output and its Ctrl-C handling, wired both ways: the notice erases the status line first, and a tool
 * cut short by the user's Ctrl-C is shown as aborted. */
export function runOutputWithInterrupt(
  opts: Pick<AgentCliOptions, "json" | "color" | "verbose">,
  abortedBy: string,
  promptsForApproval = false,
  approvalHelp?: (id: string) => string[],
) {
  const intr = interruptController((s) => out.err(s));
  const out = createRunOutput({
    json: opts.json === true,
    color: opts.color,
    interrupted: intr.interrupted,
    abortedBy,
    promptsForApproval,
    approvalHelp,
    // already checked by parseAgentOptions; a bare --verbose is on
    verbose: opts.verbose === true ? "on" : opts.verbose === false ? undefined : (opts.verbose as VerboseLevel),
  });
  return { out, intr };
}
