import { existsSync } from "node:fs";
import { childProcess } from "../infra/child-process.js";
import type { JsonSchema } from "../providers/types.js";
import type { ArgsOf } from "./builtin-args.js";
import { defineTool } from "./define.js";
import { execChildEnv } from "./exec-env.js";
import type { Tool, ToolContext, ToolOutput } from "./types.js";
import { ToolError } from "./types.js";

export interface ExecToolOptions {
  /** Used when the call gives no timeoutSeconds. Default 120. */
  defaultTimeoutSeconds?: number;
  /** Largest timeoutSeconds a call may ask for. Default 3600. */
  maxTimeoutSeconds?: number;
  /** Time between SIGTERM and SIGKILL to the process group. Default 2000 ms. */
  killGraceMs?: number;
  /** Output kept for the result (head + tail). Default 30000 chars. */
  maxOutputChars?: number;
  /** At most one `onUpdate` per interval. Default 250 ms. */
  updateIntervalMs?: number;
  /** Largest text in one `onUpdate`; a flood keeps its newest part. Default 4096 chars. */
  updateMaxChars?: number;
  /** How long to wait for the output pipes after the shell exits (background jobs may hold them). Default 1000 ms. */
  drainMs?: number;
  /** Where PATH, HOME, LANG, TERM and the `envPassthrough` names are read from. Default process.env. */
  parentEnv?: NodeJS.ProcessEnv;
  /** Names passed through from `parentEnv` beside the base ones (`tools.exec.env`). Nothing else is inherited. */
  envPassthrough?: readonly string[];
}

const DEFAULTS: Required<ExecToolOptions> = {
  defaultTimeoutSeconds: 120,
  maxTimeoutSeconds: 3600,
  killGraceMs: 2000,
  maxOutputChars: 30000,
  updateIntervalMs: 250,
  updateMaxChars: 4096,
  drainMs: 1000,
  parentEnv: process.env,
  envPassthrough: [],
};

/**
 * `exec` runs a shell command in the workspace. `onUpdate` receives the output that arrived since the previous
 * update (not the whole output so far), so streaming costs stay proportional to the output.
 */
type ExecArgs = ArgsOf<"execArgs">;

/** `execArgs` of tools/builtin-args.ts as JSON Schema, written out (tools/define.ts says why). */
export function execParameters(opts: Required<ExecToolOptions>): JsonSchema {
  return {
    type: "object",
    properties: {
      command: { type: "string", minLength: 1, description: "Shell command" },
      timeoutSeconds: {
        description: `Kill after this many seconds (default ${opts.defaultTimeoutSeconds})`,
        type: "number",
        exclusiveMinimum: 0,
        maximum: opts.maxTimeoutSeconds,
      },
    },
    required: ["command"],
    additionalProperties: false,
  };
}

export function createExecTool(options: ExecToolOptions = {}): Tool {
  const opts = { ...DEFAULTS, ...options } as Required<ExecToolOptions>;
  return defineTool({
    name: "exec",
    description:
      "Run a shell command (/bin/sh -c) in the workspace. Returns combined stdout and stderr, then the exit code. No stdin.",
    args: () => import("./builtin-args.js").then((m) => m.execArgs(opts)),
    parameters: execParameters(opts),
    concurrency: "sequential",
    execute: (args, ctx) => runExec(args, ctx, opts),
  });
}

async function runExec(args: ExecArgs, ctx: ToolContext, opts: Required<ExecToolOptions>): Promise<ToolOutput> {
  const command = args.command;
  const sandbox = ctx.sandbox;
  // a sandbox's timeoutSeconds is the default and the cap inside it
  const cap = sandbox?.timeoutSeconds;
  const timeoutSeconds = Math.min(
    args.timeoutSeconds ?? cap ?? opts.defaultTimeoutSeconds,
    cap ?? Number.POSITIVE_INFINITY,
  );
  if (ctx.signal.aborted) throw new ToolError("exec: the run was aborted before the command started");
  if (ctx.approveExec) {
    const verdict = await ctx.approveExec({ command, toolCallId: ctx.toolCallId, signal: ctx.signal });
    if (!verdict.allowed) throw new ToolError(`exec denied: ${verdict.reason}`);
    if (ctx.signal.aborted) throw new ToolError("exec: the run was aborted before the command started");
  }

  return new Promise<ToolOutput>((resolve, reject) => {
    const startedAt = Date.now();
    const output = new HeadTailText(opts.maxOutputChars);
    const updates = new UpdateThrottle(ctx.onUpdate, opts.updateIntervalMs, opts.updateMaxChars);
    let timedOut = false;
    let aborted = false;
    let killing = false;
    let pipesAbandoned = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    let settled = false;

    // Own process group (detached), so one signal to -pid reaches every process the command started.
    const passthrough = [...(opts.envPassthrough ?? []), ...(sandbox?.env ?? [])];
    const env = execChildEnv(opts.parentEnv ?? process.env, passthrough, ctx.env);
    const child = sandbox
      ? sandbox.sandbox.spawnShell(command, env)
      : childProcess().spawn("/bin/sh", ["-c", command], {
          cwd: ctx.workspaceDir,
          env,
          detached: true,
          stdio: ["ignore", "pipe", "pipe"],
        });

    const signalGroup = (signal: NodeJS.Signals | 0): boolean => {
      if (child.pid === undefined) return false;
      try {
        process.kill(-child.pid, signal);
        return true;
      } catch {
        return false; // ESRCH: the whole group is already gone.
      }
    };

    const killGroup = () => {
      if (killing) return;
      killing = true;
      signalGroup("SIGTERM");
      void sandbox?.sandbox.killInside?.();
      killTimer = setTimeout(() => signalGroup("SIGKILL"), opts.killGraceMs);
    };

    const timeoutTimer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutSeconds * 1000);

    const onAbort = () => {
      aborted = true;
      killGroup();
    };
    ctx.signal.addEventListener("abort", onAbort, { once: true });

    const onData = (chunk: string) => {
      output.push(chunk);
      updates.push(chunk);
    };
    child.stdout.setEncoding("utf8").on("data", onData);
    child.stderr.setEncoding("utf8").on("data", onData);

    const cleanup = () => {
      clearTimeout(timeoutTimer);
      clearTimeout(drainTimer);
      ctx.signal.removeEventListener("abort", onAbort);
      // The SIGKILL stays armed only while some process of the group survived the SIGTERM.
      if (killTimer && !signalGroup(0)) clearTimeout(killTimer);
      updates.finish();
    };

    const finish = () => {
      if (settled || !exit) return;
      settled = true;
      cleanup();
      resolve(buildResult());
    };

    const buildResult = (): ToolOutput => {
      const code = exit?.code ?? null;
      const signal = exit?.signal ?? null;
      let status: string;
      if (timedOut) status = `timed out after ${timeoutSeconds}s`;
      else if (aborted) status = "aborted";
      else if (code !== null) status = `exit code ${code}`;
      else status = `killed by signal ${signal}`;
      let body = output.text();
      if (body === "") body = "(no output)";
      if (pipesAbandoned) body += "\n[background processes kept the output open; later output is not shown]";
      const separator = body.endsWith("\n") ? "\n" : "\n\n";
      return {
        content: `${body}${separator}${status}`,
        isError: timedOut || aborted || code !== 0,
        details: {
          exitCode: code,
          signal,
          timedOut,
          aborted,
          outputChars: output.totalChars,
          truncatedChars: output.droppedChars,
          durationMs: Date.now() - startedAt,
        },
      };
    };

    child.on("error", (err) => {
      if (settled) return;
      // Spawn failures (missing shell, bad cwd) leave no process behind: report them as a tool error.
      if (child.pid === undefined) {
        settled = true;
        cleanup();
        // Node blames the shell for ENOENT even when it is the cwd that is missing.
        const reason = sandbox
          ? `${err.message} (the ${sandbox.sandbox.backend} sandbox)`
          : existsSync(ctx.workspaceDir)
            ? err.message
            : `workspace directory ${ctx.workspaceDir} does not exist`;
        reject(new ToolError(`exec: could not start the command: ${reason}`));
      }
    });

    child.on("exit", (code, signal) => {
      exit = { code, signal };
      // Background jobs inherit the pipes and can keep them open for good; stop waiting for them after a while.
      const wait = opts.drainMs + (killing ? opts.killGraceMs : 0);
      drainTimer = setTimeout(() => {
        pipesAbandoned = true;
        child.stdout.destroy();
        child.stderr.destroy();
        finish();
      }, wait);
    });

    child.on("close", finish);
  });
}

/** Keeps the first and last parts of a stream of text, counting what was dropped in between. */
class HeadTailText {
  private head = "";
  private tail = "";
  private readonly headMax: number;
  private readonly tailMax: number;
  droppedChars = 0;
  totalChars = 0;

  constructor(max: number) {
    // The tail gets more room: errors and summaries come last.
    this.headMax = Math.floor(max * 0.4);
    this.tailMax = max - this.headMax;
  }

  push(chunk: string): void {
    this.totalChars += chunk.length;
    let rest = chunk;
    if (this.head.length < this.headMax) {
      const room = this.headMax - this.head.length;
      this.head += rest.slice(0, room);
      rest = rest.slice(room);
    }
    if (rest === "") return;
    this.tail += rest;
    // Trimmed in batches, not per chunk, so a flood does not copy the tail on every read.
    if (this.tail.length > this.tailMax * 2) this.trimTail();
  }

  text(): string {
    this.trimTail();
    if (this.droppedChars === 0) return this.head + this.tail;
    return `${this.head}\n\n[... ${this.droppedChars} chars of output omitted ...]\n\n${this.tail}`;
  }

  private trimTail(): void {
    const excess = this.tail.length - this.tailMax;
    if (excess <= 0) return;
    this.droppedChars += excess;
    this.tail = this.tail.slice(excess);
  }
}

/** Leading-edge throttle for `onUpdate`: at most one call per interval, each at most `maxChars`. */
class UpdateThrottle {
  private pending = "";
  private skipped = 0;
  private lastEmit = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly emit: ((partial: string) => void) | undefined,
    private readonly intervalMs: number,
    private readonly maxChars: number,
  ) {}

  push(chunk: string): void {
    if (!this.emit) return;
    this.pending += chunk;
    if (this.pending.length > this.maxChars) {
      this.skipped += this.pending.length - this.maxChars;
      this.pending = this.pending.slice(-this.maxChars);
    }
    if (this.timer) return;
    const wait = this.lastEmit + this.intervalMs - Date.now();
    if (wait <= 0) this.flush();
    else this.timer = setTimeout(() => this.flush(), wait);
  }

  finish(): void {
    this.flush();
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.emit || (this.pending === "" && this.skipped === 0)) return;
    const text = this.skipped > 0 ? `[... ${this.skipped} chars skipped ...]\n${this.pending}` : this.pending;
    this.pending = "";
    this.skipped = 0;
    this.lastEmit = Date.now();
    try {
      this.emit(text);
    } catch {
      // A failing listener must not break the command or lose its result.
    }
  }
}
