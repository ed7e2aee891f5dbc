import type { AgentFinal } from "../agent/service.js";
import type { AgentEvent } from "../infra/events.js";
import type { VerboseLevel } from "../protocol/enums.js";
import { colorFor } from "./color.js";
import { EXIT } from "./exit-codes.js";
import { createTerminalRenderer, formatSummary } from "./render.js";
import { trackRunStatus } from "./run-status.js";
import { StatusLine, type StatusTimer } from "./status-line.js";

/** The parts of a process stream the output needs; tests pass recorders. */
export interface OutStream {
  write(s: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface RunOutputOptions {
  json: boolean;
  /** commander's `color` option: false after --no-color */
  color?: boolean;
  /** true once the user pressed Ctrl-C */
  interrupted?: () => boolean;
  /** how to name a run that ended aborted without the user's Ctrl-C */
  abortedBy?: string;
  stdout?: OutStream;
  stderr?: OutStream;
  env?: NodeJS.ProcessEnv;
  timer?: StatusTimer;
  /** `--verbose`: full prints each tool call's whole arguments and result (see render.ts) */
  verbose?: VerboseLevel;
  /** exec approvals are asked on this terminal (embedded runs): the status line stays away from the prompt */
  promptsForApproval?: boolean;
  /** how to answer an approval the run waits for (a gateway client: the console URL and the CLI command) */
  approvalHelp?: (id: string) => string[];
}

export interface RunOutput {
  render: (ev: AgentEvent) => void;
  /** prints the result: the summary (and any error, once) on stderr, or the result object with --json */
  finish: (final: AgentFinal) => void;
  /** writes a line to stderr without tearing the status line */
  err: (s: string) => void;
  /** removes the status line and stops its timer; safe to call more than once */
  dispose: () => void;
}

/**
 * Output for one run, shared by the embedded and the gateway path: the reply on stdout, tool lines, the status line
 * and the summary on stderr. The status line is only for a terminal on stderr and never with --json; every other
 * write erases it first, so it never mixes into the reply or a tool line.
 */
export function createRunOutput(opts: RunOutputOptions): RunOutput {
  const stdout = opts.stdout ?? process.stdout;
  const stderr = opts.stderr ?? process.stderr;
  const errColor = colorFor(stderr, { flag: opts.color, env: opts.env });
  const status =
    !opts.json && stderr.isTTY === true
      ? new StatusLine({
          write: (s) => stderr.write(s),
          color: errColor,
          timer: opts.timer,
          columns: () => stderr.columns,
        })
      : undefined;
  const out = (s: string) => {
    status?.erase();
    stdout.write(s);
  };
  const err = (s: string) => {
    status?.erase();
    stderr.write(s);
  };
  const interrupted = opts.interrupted ?? (() => false);
  const track = status ? trackRunStatus(status, { promptsForApproval: opts.promptsForApproval }) : undefined;
  const draw = opts.json
    ? (ev: AgentEvent) => stdout.write(`${JSON.stringify({ type: "event", ...ev })}\n`)
    : createTerminalRenderer({
        out,
        err,
        errColor,
        aborting: interrupted,
        approvalHelp: opts.approvalHelp,
        verbose: opts.verbose,
      });
  const render = (ev: AgentEvent) => {
    draw(ev);
    track?.(ev);
  };
  const finish = (final: AgentFinal) => {
    status?.hide();
    if (opts.json) {
      stdout.write(`${JSON.stringify({ type: "result", ...final })}\n`);
      return;
    }
    // Error payloads are not printed: they are the chat user's view of what this output already said once, the
    // model's error (in the summary below) or a failed tool (its tool line).
    const aborted = final.summary === "aborted" && !interrupted() ? opts.abortedBy : undefined;
    err(`${formatSummary(final, { abortedAs: aborted })}\n`);
  };
  return { render, finish, err, dispose: () => status?.hide() };
}

/** Only the user's own Ctrl-C is 130; a run aborted from elsewhere (drain, /stop by another client) is a failed run. */
export function exitCodeFor(final: AgentFinal, interrupted: boolean): number {
  if (interrupted) return EXIT.interrupted;
  if (final.status === "ok") return EXIT.ok;
  if (final.status === "timeout") return EXIT.timeout;
  return EXIT.runError;
}

/**
 * Ctrl-C aborts the run cleanly (the run records itself as aborted); a second Ctrl-C exits at once. `write` is the
 * run output's stderr writer, so the notice does not land on top of the status line.
 */
export function interruptController(write: (s: string) => void = (s) => process.stderr.write(s)): {
  signal: AbortSignal;
  interrupted: () => boolean;
  dispose: () => void;
} {
  const controller = new AbortController();
  let count = 0;
  const onSigint = () => {
    count++;
    if (count === 1) {
      write("\n(interrupting; press Ctrl-C again to force)\n");
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
