/*
 * The exec policy and environment as a user meets them, through real `loopgate` child processes (dist/, run
 * `npm run build` first) playing test/fixtures/gateway/exec-env.script.json5: the model runs `env`, then answers
 * with what the tool returned. No terminal is attached (stdin is ignored), which is the non-TTY path of the prompt.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cliSandbox, gatewayFixtures, useCliSandboxes } from "../fixtures/cli/sandbox.js";

useCliSandboxes();

const SECRET_ENV_KEY = "sk-secret-from-the-gateway-env";
const SECRET_CONFIG_KEY = "sk-config-provider-key";

function sandbox(exec: Record<string, unknown>) {
  return cliSandbox({
    prefix: "exec",
    script: "exec-env.script.json5",
    extraConfig: {
      models: {
        providers: {
          s: { api: "scripted", script: path.join(gatewayFixtures, "exec-env.script.json5"), models: [{ id: "m" }] },
          // a real provider key in the config: the exec child must not see it either
          openai: { api: "openai-completions", apiKey: SECRET_CONFIG_KEY, models: [{ id: "gpt-4o-mini" }] },
        },
      },
      tools: { exec },
    },
  });
}

type Line = { type: string; stream?: string; data?: { phase?: string; result?: string; isError?: boolean } };

function toolResult(stdout: string) {
  const lines = stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Line);
  return lines.find((l) => l.type === "event" && l.stream === "tool" && l.data?.phase === "result")?.data;
}

describe("exec through the real CLI", () => {
  it("a gateway run's exec child gets PATH but not the gateway's OPENAI_API_KEY or the config's provider key", async () => {
    // the gateway's default security is allowlist: `env` is allowed by the config, so nobody has to approve it
    const s = sandbox({ allowlist: ["env"] });
    const gw = await s.gateway(["--port", "0"], { OPENAI_API_KEY: SECRET_ENV_KEY, LOOPGATE_PROBE: "gateway-env" });
    const r = await s.agent(["--message", "show me the environment", "--url", gw.url, "--json"]).done;
    expect(r.code).toBe(0);
    const result = toolResult(r.stdout);
    expect(result?.isError).toBe(false);
    expect(result?.result).toMatch(/^PATH=\//m);
    expect(result?.result).toContain(`HOME=${s.tmp}\n`);
    expect(result?.result).not.toContain(SECRET_ENV_KEY);
    expect(result?.result).not.toContain(SECRET_CONFIG_KEY);
    expect(result?.result).not.toContain("LOOPGATE_");
    gw.child.kill("SIGTERM");
    expect((await gw.done).code).toBe(0);
  });

  it("tools.exec.env passes a named variable through, and nothing else", async () => {
    const s = sandbox({ security: "full", env: ["PROJECT_REGION"] });
    const r = await s.agent(["--local", "--message", "env please", "--json"], {
      PROJECT_REGION: "eu-west-1",
      OPENAI_API_KEY: SECRET_ENV_KEY,
    }).done;
    expect(r.code).toBe(0);
    const result = toolResult(r.stdout)?.result ?? "";
    expect(result).toContain("PROJECT_REGION=eu-west-1\n");
    expect(result).not.toContain(SECRET_ENV_KEY);
  });

  it("--local runs exec without asking by default (security full)", async () => {
    const s = sandbox({});
    const r = await s.agent(["--local", "--message", "env please"]).done;
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/⚙ exec env → ok/);
    expect(r.stdout).toMatch(/The environment: .*PATH=/s);
  });

  it("--local without a terminal never blocks on a question: exec is denied with the reason and the run goes on", async () => {
    const s = sandbox({ ask: "always" });
    const r = await s.agent(["--local", "--message", "env please"]).done;
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      'The environment: exec denied: approval needed (tools.exec.ask is "always"), but there is no terminal to ask on (stdin is not a TTY)',
    );
    expect(r.stderr).not.toContain("Allow exec");
  });
});
