/*
 * `loopgate mcp list` and MCP servers in the CLI's own processes, as a user runs them: real child processes of
 * dist/cli/main.js (run `npm run build` first), a temp config with server-everything from the npm registry over
 * stdio beside a server that fails to start. Every server runs with the sandbox as its cwd, so a server left behind
 * by a process that exited is found by its cwd (Linux /proc).
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { EVERYTHING } from "../../src/tools/mcp/test-servers.test-support.js";
import { cliSandbox, useCliSandboxes } from "../fixtures/cli/sandbox.js";

useCliSandboxes();

/** The processes (pids) whose working directory is `dir`. */
function processesIn(dir: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readlinkSync(path.join("/proc", entry, "cwd")) === dir) found.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

function mcpSandbox(prefix: string, script = "reply.script.json5") {
  const s = cliSandbox({ prefix, script });
  const serversDir = path.join(s.tmp, "servers");
  fs.mkdirSync(serversDir);
  const config = JSON.parse(fs.readFileSync(s.config, "utf8")) as Record<string, unknown>;
  config.mcp = {
    servers: {
      everything: { command: process.execPath, args: [EVERYTHING, "stdio"], cwd: serversDir },
      broken: {
        command: process.execPath,
        args: ["-e", "process.exit(3)"],
        cwd: serversDir,
        connectionTimeoutMs: 5000,
      },
    },
  };
  fs.writeFileSync(s.config, JSON.stringify(config));
  return { ...s, serversDir };
}

interface Listed {
  servers: Array<{ server: string; transport: string; state: string; toolCount: number; lastError: string | null }>;
}

describe("loopgate mcp list", () => {
  it("--json against a running gateway shows the healthy server and the broken one with its error; no server outlives the gateway", async () => {
    const s = mcpSandbox("mcplist");
    const gw = await s.gateway();
    let listed: Listed | undefined;
    // the servers connect in the background: ask until neither is still connecting
    for (let i = 0; i < 100; i++) {
      const r = await s.run(["mcp", "list", "--json", "--config", s.config, "--url", gw.url]).done;
      expect(r.code, r.stderr).toBe(0);
      listed = JSON.parse(r.stdout) as Listed;
      if (listed.servers.every((x) => x.state !== "connecting")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    console.log(`loopgate mcp list --json:\n${JSON.stringify(listed, null, 2)}`);
    expect(listed?.servers).toMatchObject([
      { server: "everything", transport: "stdio", state: "ready", lastError: null },
      {
        server: "broken",
        transport: "stdio",
        state: "failed",
        lastError: expect.stringContaining("exited with code 3"),
      },
    ]);
    expect(listed?.servers[0]?.toolCount).toBeGreaterThan(0);

    const text = await s.run(["mcp", "list", "--config", s.config, "--url", gw.url]).done;
    console.log(`loopgate mcp list:\n${text.stdout}`);
    expect(text.stdout).toMatch(/^SERVER\s+TRANSPORT\s+STATE\s+TOOLS/);
    expect(text.stdout).toMatch(/broken\s+stdio\s+failed/);

    expect(processesIn(s.serversDir).length).toBeGreaterThan(0);
    gw.child.kill("SIGTERM");
    expect((await gw.done).code).toBe(0);
    expect(processesIn(s.serversDir)).toEqual([]);
  });

  it("--local starts the servers itself, prints both once settled, and leaves no server running", async () => {
    const s = mcpSandbox("mcplocal");
    const r = await s.run(["mcp", "list", "--json", "--local", "--config", s.config]).done;
    console.log(`loopgate mcp list --json --local:\n${r.stdout}${r.stderr}`);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as Listed).servers.map((x) => [x.server, x.state])).toEqual([
      ["everything", "ready"],
      ["broken", "failed"],
    ]);
    expect(processesIn(s.serversDir)).toEqual([]);
  });
});

describe("loopgate agent --local with MCP servers", () => {
  it("the model calls everything__echo, the reply carries the echo despite the broken server, and no server outlives the CLI", async () => {
    const s = mcpSandbox("mcpagent", "../gateway/mcp-echo.script.json5");
    const r = await s.agent(["--local", "--message", "echo please"]).done;
    console.log(`stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("The tool said: Echo: hello from the CLI");
    expect(processesIn(s.serversDir)).toEqual([]);
  });
});
