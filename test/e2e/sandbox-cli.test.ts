/*
 * The sandbox from the CLI, as a user meets it: real `loopgate` child processes (dist/cli/main.js; `npm run build`
 * first) on a temp config. A config asking for a backend this machine cannot run fails at load with the fix named;
 * `loopgate sandbox explain | list | recreate` answer from the config and the state dir; an embedded run (--local)
 * runs its exec in bubblewrap too.
 */
import fs from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { bubblewrapUnavailable } from "../../src/tools/sandbox/bwrap-availability.test-support.js";
import { cliSandbox, root, useCliSandboxes } from "../fixtures/cli/sandbox.js";

useCliSandboxes();

const execMessage = path.join(root, "test", "fixtures", "sandbox", "exec-message.script.json5");
let unavailable: string | undefined;
beforeAll(async () => {
  unavailable = await bubblewrapUnavailable();
});

/** A CLI sandbox whose model runs the user's message with exec (test/fixtures/sandbox/exec-message.script.json5). */
function withSandboxConfig(prefix: string, sandbox: Record<string, unknown>) {
  const s = cliSandbox({ prefix });
  const config = JSON.parse(fs.readFileSync(s.config, "utf8")) as {
    agents: { defaults: Record<string, unknown> };
    models: { providers: { s: { script: string } } };
  };
  config.agents.defaults.sandbox = sandbox;
  config.models.providers.s.script = execMessage;
  fs.writeFileSync(s.config, JSON.stringify(config));
  return s;
}

describe("a sandbox the machine cannot run is a load-time error", () => {
  it("bubblewrap without bwrap on PATH: the gateway does not start, and says to install it", async () => {
    const s = withSandboxConfig("sbx-nobwrap", { mode: "all" });
    const r = await s.run(["gateway", "--config", s.config, "--port", "0"], { env: { PATH: "/nonexistent" } }).done;
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(
      /agents\.defaults\.sandbox\.backend "bubblewrap": the bubblewrap sandbox needs the bwrap binary, which is not installed .*apt-get install bubblewrap/,
    );
    expect(r.stdout).not.toContain("listening on");
  });

  it("docker where no daemon answers: the gateway does not start, and says no daemon answers", async () => {
    const s = withSandboxConfig("sbx-nodocker", { mode: "all", backend: "docker" });
    const env = { DOCKER_HOST: `unix://${path.join(s.tmp, "no-daemon.sock")}` };
    const r = await s.run(["gateway", "--config", s.config, "--port", "0"], { env }).done;
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/agents\.defaults\.sandbox\.backend "docker": no Docker daemon answers/);
  });
});

describe("loopgate sandbox", () => {
  it("explain says whether a session is sandboxed, why, and the exec policy that follows", async () => {
    const s = withSandboxConfig("sbx-explain", { mode: "non-main", scope: "session", memoryMb: 512 });
    const main = await s.run(["sandbox", "explain", "--config", s.config]).done;
    expect(main.code).toBe(0);
    expect(main.stdout).toContain(
      'not sandboxed: agents.defaults.sandbox.mode is "non-main" and this is agent "main"\'s main session',
    );
    expect(main.stdout).toContain('exec policy: security "allowlist", ask "on-miss"');
    const other = await s.run(["sandbox", "explain", "--config", s.config, "--session", "support-42"]).done;
    expect(other.stdout).toContain("agent main, session agent:main:support-42");
    expect(other.stdout).toMatch(
      /sandboxed: agents\.defaults\.sandbox\.mode is "non-main" and this is not the main session/,
    );
    expect(other.stdout).toMatch(/backend bubblewrap · scope session \(session-main-[0-9a-f]{16}\) · workspace none/);
    expect(other.stdout).toContain("limit: memoryMb 512: an address-space cap per process (ulimit -v)");
    expect(other.stdout).toContain("pids, cpus: not enforced by bubblewrap");
    expect(other.stdout).toContain(
      'exec policy: security "full", ask "on-miss" — sandboxed (bubblewrap, network none): security "full" by default, the sandbox is the boundary',
    );
    expect(other.stdout).toContain("in the gateway: message, plugin tools, MCP tools");
  });

  it("an embedded run's exec runs in the sandbox; list shows its scope and recreate removes it", async (t) => {
    if (unavailable) return t.skip(unavailable);
    const s = withSandboxConfig("sbx-list", { mode: "all", scope: "session" });
    const ran = await s.agent([
      "--local",
      "-s",
      "box",
      "-m",
      "echo from-inside > made.txt; cat /proc/1/cmdline | head -c 5",
    ]).done;
    expect(ran.stdout).toContain("bwrap");
    const listed = await s.run(["sandbox", "list", "--config", s.config, "--json"]).done;
    const entries = (JSON.parse(listed.stdout) as { sandboxes: Array<Record<string, string>> }).sandboxes;
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ backend: "bubblewrap", scope: "session", sessionKey: "agent:main:box" });
    expect(fs.readFileSync(path.join(entries[0].dir, "workspace", "made.txt"), "utf8")).toBe("from-inside\n");
    const recreated = await s.run(["sandbox", "recreate", "--config", s.config, "--session", "box"]).done;
    expect(recreated.stdout).toContain(`removed ${entries[0].scopeKey}`);
    expect(fs.existsSync(entries[0].dir)).toBe(false);
    expect((await s.run(["sandbox", "list", "--config", s.config]).done).stdout).toContain("no sandboxes under");
  });
});
