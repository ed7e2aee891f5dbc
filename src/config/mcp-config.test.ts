// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the tests write "${ENV}" references as a config does
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { mcpServersForAgent } from "../tools/mcp/agent-servers.js";
import { checkConfig } from "./check.js";
import { ConfigError, loadConfig } from "./load.js";
import { configSchema } from "./schema.js";
import { finishConfig } from "./source.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** The problems loading `text` as a config file reports (every one, with its key path). */
function problems(text: string, env: NodeJS.ProcessEnv = {}): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-mcp-config-"));
  dirs.push(dir);
  const file = path.join(dir, "loopgate.json5");
  fs.writeFileSync(file, text);
  try {
    loadConfig({ configPath: file, env: { LOOPGATE_STATE_DIR: dir, ...env } });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe("mcp.servers at load", () => {
  it("a server with neither command nor url, with both, or with a bad url is refused, naming its key path", () => {
    const found = problems(`{ mcp: { servers: {
      none: { args: ["x"] },
      both: { command: "node", url: "http://127.0.0.1:1/mcp" },
      bad: { url: "ftp://example.com" },
      mixed: { command: "node", transport: "sse" },
    } } }`);
    console.log(found.join("\n"));
    expect(found).toContain("mcp.servers.none: set command (a stdio server) or url (a remote server)");
    expect(found).toContain("mcp.servers.both: set either command (a stdio server) or url (a remote server), not both");
    expect(found).toContain("mcp.servers.bad.url: expected a URL (http:// or https://)");
    expect(found).toContain('mcp.servers.mixed.transport: "sse" needs a url, not a command');
  });

  it("an agent naming an unknown server, and an unset ${ENV} in headers or env, are load errors", () => {
    const found = problems(
      `{
        mcp: { servers: { gh: { url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer \${GH_TOKEN}" } },
                          local: { command: "node", env: { KEY: "\${LOCAL_KEY}" } } } },
        agents: { defaults: { mcp: { servers: ["gh", "nope"] } }, list: [{ id: "main", mcp: { servers: ["local", "typo"] } }] },
      }`,
    );
    console.log(found.join("\n"));
    expect(found).toContain('agents.defaults.mcp.servers[1]: unknown MCP server "nope" (configured: gh, local)');
    expect(found).toContain('agents.list[0].mcp.servers[1]: unknown MCP server "typo" (configured: gh, local)');
    expect(found).toContain(
      "mcp.servers.gh.headers.Authorization: references ${GH_TOKEN}, which is not set in the environment",
    );
    expect(found).toContain("mcp.servers.local.env.KEY: references ${LOCAL_KEY}, which is not set in the environment");
  });

  it("mcp.servers loads (the gateway and the CLI start the servers), and a problem never echoes its headers", () => {
    expect(
      problems(
        '{ mcp: { servers: { gh: { url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer ghp_literal_secret" } } } } }',
      ),
    ).toEqual([]);
    const found = problems(
      '{ mcp: { servers: { gh: { url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer ghp_literal_secret" }, enabled: "yes" } } } }',
    );
    console.log(found.join("\n"));
    expect(found.length).toBeGreaterThan(0);
    expect(found.join("\n")).not.toContain("ghp_literal_secret");
  });

  it("defaults: enabled, 60 s per request, 30 s to connect, no approval; cwd is relative to the config file", () => {
    const config = configSchema.parse({ mcp: { servers: { s: { command: "node", cwd: "servers/s" } } } });
    expect(config.mcp.servers.s).toMatchObject({
      args: [],
      env: {},
      headers: {},
      enabled: true,
      requestTimeoutMs: 60000,
      connectionTimeoutMs: 30000,
      approval: "never",
    });
    expect(checkConfig(config, {})).toEqual([]);
    expect(finishConfig(config, "/etc/lg/loopgate.json5", {}).mcp.servers.s?.cwd).toBe("/etc/lg/servers/s");
  });

  it("an agent's servers: its own list, else agents.defaults.mcp.servers, else every server", () => {
    const config = configSchema.parse({
      mcp: { servers: { a: { command: "a" }, b: { command: "b" } } },
      agents: {
        defaults: { mcp: { servers: ["a"] } },
        list: [{ id: "main" }, { id: "ops", mcp: { servers: ["b"] } }, { id: "none", mcp: { servers: [] } }],
      },
    });
    expect(mcpServersForAgent(config, "main")).toEqual(["a"]);
    expect(mcpServersForAgent(config, "ops")).toEqual(["b"]);
    expect(mcpServersForAgent(config, "none")).toEqual([]);
    expect(mcpServersForAgent(configSchema.parse({}), "main")).toBeUndefined();
  });
});
