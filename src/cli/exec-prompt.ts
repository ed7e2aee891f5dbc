import { createInterface } from "node:readline";
import type { ExecPrompt } from "../agent/exec-approvals.js";

export interface PromptTerminal {
  input: NodeJS.ReadableStream;
  /** where the question goes (stderr: stdout carries the reply) */
  output: { write(s: string): unknown };
  /** false: nobody can answer, so the prompt denies at once instead of blocking */
  interactive: boolean;
}

/**
 * The exec approval prompt of `loopgate agent --local`: `Allow exec "rm -rf build"? [y]es once / [a]lways / [N]o`.
 * One line is read; anything but y/yes/a/always (an empty line too) denies. Without a terminal it denies at once
 * with the reason, so a piped or scripted run never hangs on a question nobody sees. The line is read in cooked
 * mode (readline without terminal handling), so Ctrl-C still interrupts the run as usual.
 */
export function terminalExecPrompt(term: PromptTerminal): ExecPrompt {
  return (request, signal) => {
    if (!term.interactive) {
      return Promise.resolve({
        deny: `approval needed (${request.reason}), but there is no terminal to ask on (stdin is not a TTY); allow the command in tools.exec.allowlist or run with a terminal`,
      });
    }
    return new Promise((resolve) => {
      const rl = createInterface({ input: term.input, terminal: false });
      let answered = false;
      const done = (answer: Awaited<ReturnType<ExecPrompt>>) => {
        if (answered) return;
        answered = true;
        signal.removeEventListener("abort", onAbort);
        // closing emits "close" at once: the answer is already taken by then
        rl.close();
        resolve(answer);
      };
      // timed out or the run stopped: the approvals module already decided; stop reading
      const onAbort = () => {
        term.output.write("\n");
        done("deny");
      };
      signal.addEventListener("abort", onAbort, { once: true });
      // a tool that waits for approval (an MCP server's `approval`) is named as a tool, with its (redacted) arguments
      const what =
        request.kind === "tool"
          ? `tool ${request.tool} ${JSON.stringify(request.args ?? {})}`
          : `exec ${JSON.stringify(request.command)}`;
      term.output.write(`Allow ${what}? [y]es once / [a]lways / [N]o `);
      rl.once("line", (line) => done(parseAnswer(line)));
      // end of input (Ctrl-D) answers no
      rl.once("close", () => done("deny"));
    });
  };
}

export function parseAnswer(line: string): "allow-once" | "allow-always" | "deny" {
  const a = line.trim().toLowerCase();
  if (a === "y" || a === "yes") return "allow-once";
  if (a === "a" || a === "always") return "allow-always";
  return "deny";
}
