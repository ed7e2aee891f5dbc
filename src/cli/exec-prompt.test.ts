import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import type { ExecApprovalRequested } from "../protocol/exec-approvals.js";
import { terminalExecPrompt } from "./exec-prompt.js";

const request: ExecApprovalRequested = {
  id: "ap-1",
  command: "rm -rf build",
  cwd: "/ws",
  agentId: "main",
  sessionKey: "agent:main:main",
  runId: "r1",
  security: "full",
  ask: "always",
  reason: 'tools.exec.ask is "always"',
  createdAtMs: 0,
  expiresAtMs: 120_000,
};

/** A terminal whose keyboard is a stream the test writes to (a pty is not available here). */
function fakeTerminal(interactive = true) {
  const input = new PassThrough();
  let written = "";
  const prompt = terminalExecPrompt({ input, output: { write: (s: string) => (written += s) }, interactive });
  return { input, prompt, written: () => written };
}

describe("the terminal approval prompt", () => {
  it.each([
    ["y", "allow-once"],
    ["yes", "allow-once"],
    ["A", "allow-always"],
    ["always", "allow-always"],
    ["", "deny"],
    ["n", "deny"],
    ["sure", "deny"],
  ])("answering %j means %s", async (line, decision) => {
    const t = fakeTerminal();
    const answer = t.prompt(request, new AbortController().signal);
    expect(t.written()).toBe('Allow exec "rm -rf build"? [y]es once / [a]lways / [N]o ');
    t.input.write(`${line}\n`);
    expect(await answer).toBe(decision);
  });

  it("a tool waiting for approval is asked about as a tool, with its redacted arguments", async () => {
    const t = fakeTerminal();
    const answer = t.prompt(
      {
        ...request,
        command: 'everything__echo {"message":"[redacted]"}',
        kind: "tool",
        tool: "everything__echo",
        args: { message: "[redacted]" },
      },
      new AbortController().signal,
    );
    console.log(t.written());
    expect(t.written()).toBe('Allow tool everything__echo {"message":"[redacted]"}? [y]es once / [a]lways / [N]o ');
    t.input.write("y\n");
    expect(await answer).toBe("allow-once");
  });

  it("end of input (Ctrl-D) answers no", async () => {
    const t = fakeTerminal();
    const answer = t.prompt(request, new AbortController().signal);
    t.input.end();
    expect(await answer).toBe("deny");
  });

  it("a timeout or abort stops waiting for a line", async () => {
    const t = fakeTerminal();
    const stop = new AbortController();
    const answer = t.prompt(request, stop.signal);
    stop.abort();
    expect(await answer).toBe("deny");
    // a line typed later is not taken for this question
    t.input.write("y\n");
  });

  it("without a terminal it denies at once and says why, never waiting for input", async () => {
    const t = fakeTerminal(false);
    expect(await t.prompt(request, new AbortController().signal)).toEqual({
      deny: 'approval needed (tools.exec.ask is "always"), but there is no terminal to ask on (stdin is not a TTY); allow the command in tools.exec.allowlist or run with a terminal',
    });
    expect(t.written()).toBe("");
  });
});
