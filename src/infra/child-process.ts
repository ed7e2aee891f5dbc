import type * as ChildProcess from "node:child_process";
import { promisify } from "node:util";

/**
 * node:child_process, loaded on first use. Why: the exec tool and the sandbox backends are part of every
 * `agent --local` process, while most turns spawn nothing; importing child_process (with the dgram and socket-list
 * parts it pulls in) cost each one-shot run ~2 ms before anything ran (bench/README.md, cold CLI built-ins).
 * getBuiltinModule returns the module `import` would, synchronously.
 */
export function childProcess(): typeof ChildProcess {
  return process.getBuiltinModule("node:child_process");
}

/** `promisify(execFile)`, with child_process loaded on the first call. */
export const execFileAsync = ((...args: Parameters<typeof ChildProcess.execFile>) =>
  (promisify(childProcess().execFile) as (...a: unknown[]) => unknown)(
    ...args,
  )) as unknown as typeof ChildProcess.execFile.__promisify__;
