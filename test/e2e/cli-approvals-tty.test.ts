/*
 * Exec approvals as a user meets them in a real terminal (tmux, see test/fixtures/cli/tmux.ts): real `loopgate`
 * child processes from dist/ (run `npm run build` first) playing exec-echo.script.json5, whose model runs
 * `echo hi` and answers with what it printed.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cli, cliSandbox, gatewayFixtures, useCliSandboxes } from "../fixtures/cli/sandbox.js";
import { tmuxAvailable, tmuxTerminal } from "../fixtures/cli/tmux.js";

useCliSandboxes();

const QUESTION = 'Allow exec "echo hi"? [y]es once / [a]lways / [N]o';
const count = (text: string, part: string) => text.split(part).length - 1;

function sandbox(exec: Record<string, unknown>) {
  return cliSandbox({
    prefix: "approvals-tty",
    script: "exec-echo.script.json5",
    extraConfig: {
      models: {
        providers: {
          s: { api: "scripted", script: path.join(gatewayFixtures, "exec-echo.script.json5"), models: [{ id: "m" }] },
        },
      },
      tools: { exec },
    },
  });
}

describe.skipIf(!tmuxAvailable())("exec approvals on a terminal", () => {
  it("approval-question-not-overdrawn: --local asks once and the question stays on screen while it waits", async () => {
    const s = sandbox({ ask: "always" });
    const term = tmuxTerminal(
      [process.execPath, cli, "agent", "--local", "--config", s.config, "-m", "run echo hi"],
      { ...s.env, NO_COLOR: "1" },
      s.tmp,
    );
    await term.waitFor(/Allow exec/);
    // the status line ticks every 100 ms: ten ticks later the question must still be the line the cursor is on
    await new Promise((r) => setTimeout(r, 1000));
    const waiting = term.screen();
    console.log(`--- the terminal while the question waits:\n${waiting.trimEnd()}`);
    expect(count(waiting, QUESTION)).toBe(1);
    expect(waiting).not.toMatch(/running \d/);
    term.type("y");
    const after = await term.waitFor(/\[exit \d+\]/);
    console.log(`--- the terminal after answering y:\n${after.trimEnd()}`);
    expect(count(after, QUESTION)).toBe(1);
    expect(after).toContain("⚙ exec echo hi → ok");
    expect(after).toContain("The command said: hi");
    expect(after).toContain("[exit 0]");
  });
});
