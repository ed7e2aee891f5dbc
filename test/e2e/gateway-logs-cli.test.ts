/*
 * `loopgate gateway` logging as an operator sees it: real child processes of dist/cli/main.js (run `npm run build`
 * first), a temp state dir and config whose model is the scripted provider, port 0. Logs go to stderr; stdout keeps
 * only the listening lines.
 */
import { describe, expect, it } from "vitest";
import { type CliResult, cliSandbox, type OnStdout, useCliSandboxes } from "../fixtures/cli/sandbox.js";

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (ERROR|WARN |INFO |DEBUG) /;

useCliSandboxes();

function sandbox() {
  const s = cliSandbox({ prefix: "gwlog" });
  const { config } = s;
  const run = (args: string[], extraEnv: NodeJS.ProcessEnv = {}, onStdout?: OnStdout) =>
    s.run(args, { env: extraEnv, onStdout });

  /**
   * Starts `loopgate gateway` with `args`, sends one message through `loopgate agent`, stops the gateway with
   * SIGTERM and returns what the gateway printed.
   */
  const gatewayWithOneRun = async (args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<CliResult> => {
    let resolveUrl!: (url: string) => void;
    const urlSeen = new Promise<string>((r) => (resolveUrl = r));
    const gw = run(["gateway", "--config", config, "--port", "0", ...args], extraEnv, (soFar) => {
      const m = soFar.match(/listening on (ws:\/\/\S+)/);
      if (m) resolveUrl(m[1]);
    });
    const url = await Promise.race([
      urlSeen,
      gw.done.then((r) => {
        throw new Error(`gateway exited ${r.code}: ${r.stderr}`);
      }),
    ]);
    const agent = await run(["agent", "--config", config, "--url", url, "--message", "my private words"]).done;
    expect(agent.code).toBe(0);
    gw.child.kill("SIGTERM");
    const result = await gw.done;
    expect(result.code).toBe(0);
    return result;
  };

  return { run, config, gatewayWithOneRun };
}

const lines = (stderr: string) => stderr.split("\n").filter((l) => l !== "");

describe("loopgate gateway logs", () => {
  it("logs connect, disconnect and the run's lines at info with timestamps on stderr, no debug, no message text", async () => {
    const r = await sandbox().gatewayWithOneRun([]);
    const log = lines(r.stderr);
    for (const line of log) expect(line).toMatch(TIMESTAMP);
    const find = (re: RegExp) => log.find((l) => re.test(l));
    expect(
      find(/ INFO {2}connect conn=\S+ client=cli mode=cli role=operator scopes=\d+ remote=127\.0\.0\.1$/),
    ).toBeDefined();
    expect(find(/ INFO {2}run accepted runId=\S+ session=agent:main:main receipt=started$/)).toBeDefined();
    expect(find(/ INFO {2}run started runId=\S+ session=agent:main:main$/)).toBeDefined();
    expect(
      find(/ INFO {2}run ended .*status=ok summary=completed .*durationMs=\d+ tokensIn=12 tokensOut=4 model=s\/m/),
    ).toBeDefined();
    expect(
      find(/ INFO {2}disconnect conn=\S+ client=cli mode=cli role=operator .*reason="client closed"/),
    ).toBeDefined();
    expect(find(/ INFO {2}SIGTERM, draining/)).toBeDefined();
    expect(log.some((l) => / DEBUG /.test(l))).toBe(false);
    expect(r.stderr).not.toContain("my private words");
    expect(r.stdout).not.toMatch(TIMESTAMP);
  });

  it("with --log-format json, every stderr line is a JSON object with time, level, msg and the fields", async () => {
    const r = await sandbox().gatewayWithOneRun(["--log-format", "json"]);
    const records = lines(r.stderr).map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const rec of records) {
      expect(rec).toMatchObject({
        time: expect.stringMatching(/Z$/),
        level: expect.any(String),
        msg: expect.any(String),
      });
    }
    expect(records.find((rec) => rec.msg === "connect")).toMatchObject({ level: "info", client: "cli", mode: "cli" });
    expect(records.find((rec) => rec.msg === "run ended")).toMatchObject({
      level: "info",
      status: "ok",
      tokensIn: 12,
      tokensOut: 4,
      model: "s/m",
    });
  });

  it("warns once about an invalid LOOPGATE_LOG_LEVEL and keeps logging at info", async () => {
    const r = await sandbox().gatewayWithOneRun([], { LOOPGATE_LOG_LEVEL: "loud" });
    const warnings = lines(r.stderr).filter((l) => l.includes("LOOPGATE_LOG_LEVEL"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/ WARN {2}LOOPGATE_LOG_LEVEL: expected one of error, warn, info, debug, got "loud"/);
    expect(r.stderr).toMatch(/ INFO {2}run ended /);
  });

  it("LOOPGATE_LOG_LEVEL=warn hides the info lines", async () => {
    const r = await sandbox().gatewayWithOneRun([], { LOOPGATE_LOG_LEVEL: "warn" });
    expect(r.stderr).not.toMatch(/ INFO /);
  });

  it("--verbose adds a debug line for each RPC call with its method and duration", async () => {
    const r = await sandbox().gatewayWithOneRun(["--verbose"]);
    expect(r.stderr).toMatch(/ DEBUG rpc conn=\S+ method=agent ms=[\d.]+$/m);
  });

  it("refuses an unknown --log-format as a usage error (exit 2) in one line", async () => {
    const s = sandbox();
    const r = await s.run(["gateway", "--config", s.config, "--port", "0", "--log-format", "xml"]).done;
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toEqual([expect.stringContaining('--log-format: expected text or json, got "xml"')]);
    expect(r.stdout).toBe("");
  });
});
