import { type ChildProcess, spawn } from "node:child_process";
import type { JSONRPCMessage, Transport } from "@modelcontextprotocol/client";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/client";

/**
 * The stdio transport, written here rather than taken from the SDK for three reasons: the SDK's adds LOGNAME, SHELL
 * and USER to whatever environment it is given (a server must get exactly child-env.ts's), it hides the exit code
 * and signal that say why a server died, and it kills only the child, not what the child started (an `npx` wrapper
 * leaves its server running). Here the child leads its own process group, and close() ends the group.
 *
 * stderr is never inherited (it would land in the gateway's log stream): its last few KB are kept for `lastError`.
 */

export const STDERR_TAIL_BYTES = 4096;
const CLOSE_GRACE_MS = 2000;

export interface StdioServerParams {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
}

export class McpStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child?: ChildProcess;
  private readonly buffer = new ReadBuffer();
  private stderr = "";
  private exit?: { code: number | null; signal: NodeJS.Signals | null };
  private closing = false;
  /** why this transport gave up on the server itself, if it did */
  private fatal?: string;

  constructor(private readonly params: StdioServerParams) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The end of what the child wrote to stderr (at most STDERR_TAIL_BYTES), trimmed. */
  stderrTail(): string {
    return this.stderr.trim();
  }

  /** "exited with code 1" / "killed by SIGKILL" once the child is gone (and why, if we ended it), else undefined. */
  exitDescription(): string | undefined {
    if (!this.exit) return undefined;
    const how = this.exit.signal ? `killed by ${this.exit.signal}` : `exited with code ${this.exit.code}`;
    return this.fatal ? `${how} (${this.fatal})` : how;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.params.command, this.params.args, {
        env: this.params.env,
        cwd: this.params.cwd,
        stdio: ["pipe", "pipe", "pipe"],
        // its own process group, so close() can end whatever the server started
        detached: process.platform !== "win32",
        windowsHide: true,
      });
      this.child = child;
      child.once("error", (err) => {
        reject(err);
        this.onerror?.(err);
      });
      child.once("spawn", () => resolve());
      child.stdout?.on("data", (chunk: Buffer) => {
        try {
          this.buffer.append(chunk);
        } catch (err) {
          // a message over the buffer's 10 MB: this server cannot be followed any more, and a throw here would
          // reach the gateway's process as an uncaught exception
          this.fatal = (err as Error).message;
          this.onerror?.(err as Error);
          void this.close();
          return;
        }
        this.drain();
      });
      child.stderr?.on("data", (chunk: Buffer) => {
        this.stderr = (this.stderr + chunk.toString("utf8")).slice(-STDERR_TAIL_BYTES);
      });
      // a write to a child that died is reported through close, not as an unhandled error
      child.stdin?.on("error", (err) => this.onerror?.(err));
      child.once("exit", (code, signal) => {
        this.exit = { code, signal };
      });
      child.once("close", (code, signal) => {
        this.exit ??= { code, signal };
        this.onclose?.();
      });
    });
  }

  private drain(): void {
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.buffer.readMessage();
      } catch (err) {
        this.onerror?.(err as Error);
        continue;
      }
      if (message === null) return;
      this.onmessage?.(message);
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin || this.exit) {
        reject(new Error("the server process is not running"));
        return;
      }
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once("drain", () => resolve());
    });
  }

  /** Ends stdin, then SIGTERM to the group, then SIGKILL; resolves once the child has exited. */
  async close(): Promise<void> {
    const child = this.child;
    // a child that never spawned (no pid) has nothing to wait for
    if (!child || child.pid === undefined || this.closing) return;
    this.closing = true;
    if (this.exit) {
      // the server is gone; what it started may not be
      this.signal(child, "SIGTERM");
      return;
    }
    const exited = new Promise<void>((resolve) => {
      if (this.exit) resolve();
      child.once("exit", () => resolve());
    });
    const within = (ms: number) =>
      Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);
    child.stdin?.end();
    this.signal(child, "SIGTERM");
    if (!(await within(CLOSE_GRACE_MS))) {
      this.signal(child, "SIGKILL");
      await within(CLOSE_GRACE_MS);
    }
  }

  private signal(child: ChildProcess, signal: NodeJS.Signals): void {
    try {
      if (child.pid !== undefined && process.platform !== "win32") process.kill(-child.pid, signal);
      else child.kill(signal);
    } catch {
      // already gone
    }
  }
}
