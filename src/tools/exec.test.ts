import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createExecTool } from "./exec.js";
import { makeSandbox, type Sandbox } from "./test-helpers.js";
import { checkToolArgs } from "./validate.js";

const exec = createExecTool();
let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
});
afterEach(() => sb.cleanup());

/** True once `pid` no longer runs. A zombie counts as gone: it runs nothing and only waits to be reaped. */
async function processGone(pid: number): Promise<boolean> {
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    if (stat === "" || /\) Z /.test(stat)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

async function backgroundPid(): Promise<number> {
  return Number((await readFile(path.join(sb.ws, "bg.pid"), "utf8")).trim());
}

describe("exec", () => {
  it("returns stdout and stderr in arrival order, ending with the exit code", async () => {
    const out = await exec.execute({ command: "echo out1; sleep 0.3; echo err1 >&2; sleep 0.3; echo out2" }, sb.ctx());
    expect(out.content).toBe("out1\nerr1\nout2\n\nexit code 0");
    expect(out.isError).toBe(false);
  });

  it("marks a non-zero exit as an error and keeps the output", async () => {
    const out = await exec.execute({ command: "echo oops; exit 3" }, sb.ctx());
    expect(out.content).toBe("oops\n\nexit code 3");
    expect(out.isError).toBe(true);
  });

  it("runs in the workspace with the extra env from the context", async () => {
    const ctx = sb.ctx({ env: { LOOPGATE_GREETING: "hi there" } });
    const out = await exec.execute({ command: 'echo "$LOOPGATE_GREETING"; pwd' }, ctx);
    expect(out.content).toBe(`hi there\n${sb.ws}\n\nexit code 0`);
  });

  it("does not hang on a command that reads stdin", async () => {
    const out = await exec.execute({ command: "cat; echo done" }, sb.ctx());
    expect(out.content).toBe("done\n\nexit code 0");
  });

  it("on timeout kills the whole process tree, grandchildren included", async () => {
    const out = await exec.execute(
      { command: "echo begun; sleep 30 & echo $! > bg.pid; wait", timeoutSeconds: 0.5 },
      sb.ctx(),
    );
    expect(out.isError).toBe(true);
    expect(out.content).toBe("begun\n\ntimed out after 0.5s");
    expect(await processGone(await backgroundPid())).toBe(true);
  });

  it("kills processes that ignore SIGTERM after the grace period", async () => {
    const stubborn = createExecTool({ killGraceMs: 200 });
    const out = await stubborn.execute(
      { command: "trap '' TERM; sleep 30 & echo $! > bg.pid; wait", timeoutSeconds: 0.3 },
      sb.ctx(),
    );
    expect(out.content).toMatch(/timed out after 0.3s$/);
    expect(await processGone(await backgroundPid())).toBe(true);
  });

  it("stops the command tree when the run is aborted", async () => {
    const controller = new AbortController();
    const ctx = sb.ctx({
      signal: controller.signal,
      onUpdate: (partial) => {
        if (partial.includes("started")) controller.abort();
      },
    });
    const out = await exec.execute({ command: "sleep 30 & echo $! > bg.pid; echo started; wait" }, ctx);
    expect(out.isError).toBe(true);
    expect(out.content).toBe("started\n\naborted");
    expect(await processGone(await backgroundPid())).toBe(true);
  });

  it("returns when the shell exits even though a background job still holds the output open", async () => {
    const quick = createExecTool({ drainMs: 200 });
    const out = await quick.execute({ command: "sleep 30 & echo $! > bg.pid; echo done" }, sb.ctx());
    const pid = await backgroundPid();
    process.kill(pid, "SIGKILL");
    expect(out.isError).toBe(false);
    expect(out.content).toBe(
      "done\n\n[background processes kept the output open; later output is not shown]\n\nexit code 0",
    );
  });

  it("refuses to start when the run is already aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(exec.execute({ command: "touch ran.txt" }, sb.ctx({ signal: controller.signal }))).rejects.toThrow(
      /aborted before the command started/,
    );
    await expect(readFile(path.join(sb.ws, "ran.txt"))).rejects.toThrow();
  });

  it("caps long output, keeping its start and end with a marker of what was cut", async () => {
    const out = await exec.execute({ command: "seq 1 20000" }, sb.ctx());
    expect(out.content).toMatch(/^1\n2\n3\n/);
    expect(out.content).toMatch(/19999\n20000\n\nexit code 0$/);
    expect(out.content).toMatch(/\[\.\.\. \d+ chars of output omitted \.\.\.\]/);
    expect(out.content.length).toBeLessThan(30200);
  });

  it("streams partial output through onUpdate", async () => {
    const updates: string[] = [];
    const ctx = sb.ctx({ onUpdate: (partial) => updates.push(partial) });
    await exec.execute({ command: "echo hello; sleep 0.3; echo world" }, ctx);
    expect(updates.length).toBeGreaterThan(0);
    expect(updates.join("")).toBe("hello\nworld\n");
  });

  it("says so when the workspace directory is missing", async () => {
    const ctx = sb.ctx({ workspaceDir: path.join(sb.ws, "gone") });
    await expect(exec.execute({ command: "true" }, ctx)).rejects.toThrow(
      `exec: could not start the command: workspace directory ${path.join(sb.ws, "gone")} does not exist`,
    );
  });

  it("names a bad timeout and a missing command", async () => {
    expect(await checkToolArgs(exec, { command: "true", timeoutSeconds: 5000 })).toEqual({
      ok: false,
      error: "invalid arguments for exec: timeoutSeconds: must be <= 3600",
    });
    expect(await checkToolArgs(exec, { command: "true", timeoutSeconds: 0 })).toEqual({
      ok: false,
      error: "invalid arguments for exec: timeoutSeconds: must be > 0",
    });
    expect(await checkToolArgs(exec, {})).toEqual({
      ok: false,
      error: "invalid arguments for exec: command: is required",
    });
  });
});

describe("the exec child's environment", () => {
  const parentEnv = {
    PATH: "/usr/bin:/bin",
    HOME: "/home/someone",
    LANG: "C.UTF-8",
    TERM: "xterm",
    OPENAI_API_KEY: "sk-secret-parent-key",
    LOOPGATE_GATEWAY_TOKEN: "gw-token-123",
    PROJECT_REGION: "eu-west-1",
  };

  it("gets PATH, HOME, LANG and TERM but none of the process's secrets", async () => {
    const tool = createExecTool({ parentEnv });
    const out = await tool.execute({ command: "env" }, sb.ctx());
    expect(out.content).toContain("PATH=/usr/bin:/bin\n");
    expect(out.content).toContain("HOME=/home/someone\n");
    expect(out.content).toContain("LANG=C.UTF-8\n");
    expect(out.content).toContain("TERM=xterm\n");
    expect(out.content).not.toContain("sk-secret-parent-key");
    expect(out.content).not.toContain("gw-token-123");
    expect(out.content).not.toContain("PROJECT_REGION");
  });

  it("passes through the names listed in tools.exec.env, and the run's injected env (skills)", async () => {
    const tool = createExecTool({ parentEnv, envPassthrough: ["PROJECT_REGION", "NOT_SET_ANYWHERE"] });
    const out = await tool.execute(
      { command: 'echo "$PROJECT_REGION/$SKILL_TOKEN/$NOT_SET_ANYWHERE"' },
      sb.ctx({ env: { SKILL_TOKEN: "from-skill" } }),
    );
    expect(out.content).toBe("eu-west-1/from-skill/\n\nexit code 0");
  });

  it("still finds programs when the parent has no PATH", async () => {
    const tool = createExecTool({ parentEnv: {} });
    const out = await tool.execute({ command: "ls -d ." }, sb.ctx());
    expect(out.content).toBe(".\n\nexit code 0");
  });
});

describe("exec asks the run's policy first", () => {
  it("a denied command never starts and the model reads why", async () => {
    const asked: string[] = [];
    const ctx = sb.ctx({
      toolCallId: "call_7",
      approveExec: async ({ command, toolCallId }) => {
        asked.push(`${toolCallId}: ${command}`);
        return { allowed: false, reason: "an operator denied the command" };
      },
    });
    await expect(exec.execute({ command: "touch made-it" }, ctx)).rejects.toThrow(
      "exec denied: an operator denied the command",
    );
    expect(asked).toEqual(["call_7: touch made-it"]);
    await expect(readFile(path.join(sb.ws, "made-it"))).rejects.toThrow(/ENOENT/);
  });

  it("an allowed command runs", async () => {
    const ctx = sb.ctx({ approveExec: async () => ({ allowed: true }) });
    const out = await exec.execute({ command: "touch made-it && echo ok" }, ctx);
    expect(out.content).toBe("ok\n\nexit code 0");
  });
});
