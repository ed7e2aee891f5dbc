/*
 * Exec approvals through a gateway, as a user meets them: a real `loopgate gateway` and real `loopgate agent` /
 * `loopgate approvals` child processes from dist/ (run `npm run build` first) playing exec-echo.script.json5. The
 * gateway's default security is "allowlist" with ask "on-miss", so `echo hi` waits for an operator.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cliSandbox, gatewayFixtures, useCliSandboxes } from "../fixtures/cli/sandbox.js";

useCliSandboxes();

const OPERATOR = "operator-token-for-approvals-test";
const WRITER = "writer-token-for-approvals-test";

function sandbox(exec: Record<string, unknown> = {}) {
  return cliSandbox({
    prefix: "approvals-gw",
    script: "exec-echo.script.json5",
    extraConfig: {
      models: {
        providers: {
          s: { api: "scripted", script: path.join(gatewayFixtures, "exec-echo.script.json5"), models: [{ id: "m" }] },
        },
      },
      tools: { exec },
      gateway: {
        auth: {
          tokens: [
            { token: OPERATOR, scopes: ["operator.write", "operator.approvals"] },
            { token: WRITER, scopes: ["operator.write"] },
          ],
        },
      },
    },
  });
}

type Approval = { id: string; command: string; reason: string };

/** Polls `loopgate approvals list --json` until one approval waits. */
async function waitingApproval(s: ReturnType<typeof sandbox>, url: string): Promise<Approval> {
  for (let i = 0; i < 100; i++) {
    const r = await s.run(["approvals", "list", "--json", "--url", url, "--token", OPERATOR]).done;
    expect(r.code, r.stderr).toBe(0);
    const { approvals } = JSON.parse(r.stdout) as { approvals: Approval[] };
    if (approvals.length > 0) return approvals[0];
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error("no approval showed up in `loopgate approvals list`");
}

describe("exec approvals through a gateway, answered with `loopgate approvals`", () => {
  it("approval-client-shows-how-to-answer: the waiting client names the id, the console URL and `loopgate approvals allow`; allow runs the command", async () => {
    const s = sandbox();
    const gw = await s.gateway(["--port", "0"]);
    const agent = s.agent(["-m", "run echo hi", "--url", gw.url, "--token", OPERATOR]);
    const approval = await waitingApproval(s, gw.url);
    expect(approval.command).toBe("echo hi");

    const list = await s.run(["approvals", "list", "--url", gw.url, "--token", OPERATOR]).done;
    console.log(`--- loopgate approvals list:\n${list.stdout}`);
    expect(list.stdout).toContain(`${approval.id}  exec echo hi`);
    expect(list.stdout).toMatch(/why: "echo hi" matches no tools\.exec\.allowlist pattern/);

    const allow = await s.run(["approvals", "allow", approval.id, "--url", gw.url, "--token", OPERATOR]).done;
    console.log(`--- loopgate approvals allow:\n${allow.stdout}${allow.stderr}`);
    expect(allow.code).toBe(0);
    expect(allow.stdout).toBe(`approval ${approval.id} (echo hi): allowed once\n`);

    const r = await agent.done;
    console.log(`--- the client (stderr):\n${r.stderr}--- (stdout):\n${r.stdout}`);
    expect(r.code).toBe(0);
    const port = new URL(gw.url).port;
    expect(r.stderr).toContain(
      '⏸ exec `echo hi` waits for approval: "echo hi" matches no tools.exec.allowlist pattern',
    );
    expect(r.stderr).toMatch(new RegExp(`id ${approval.id} · denied unless answered within 1[12]\\d s`));
    expect(r.stderr).toContain(`answer in the console: http://127.0.0.1:${port}/#/approvals/${approval.id}`);
    expect(r.stderr).toContain(`loopgate approvals allow ${approval.id} --url ${gw.url}`);
    expect(r.stderr).toContain(`✓ approval ${approval.id} answered: allow-once`);
    expect(r.stdout).toContain("The command said: hi");

    // answering again: said plainly, exit 2
    const again = await s.run(["approvals", "deny", approval.id, "--url", gw.url, "--token", OPERATOR]).done;
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`params.id: exec approval "${approval.id}" was already allowed`);
    const unknown = await s.run(["approvals", "allow", "no-such-id", "--url", gw.url, "--token", OPERATOR]).done;
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('params.id: no pending exec approval "no-such-id"');

    gw.child.kill("SIGTERM");
    const g = await gw.done;
    const log = g.stdout + g.stderr;
    console.log(
      `--- the gateway's approval log lines:\n${log
        .split("\n")
        .filter((l) => l.includes("exec approval"))
        .join("\n")}`,
    );
    expect(log).toMatch(new RegExp(`exec approval requested.*id=${approval.id}.*command="?echo hi`));
    expect(log).toMatch(new RegExp(`exec approval answered.*id=${approval.id}.*decision=allow-once.*by=cli`));
  });

  it("approvals-scope-named: a token without operator.approvals is told which scope it needs", async () => {
    const s = sandbox();
    const gw = await s.gateway(["--port", "0"]);
    const r = await s.run(["approvals", "list", "--url", gw.url, "--token", WRITER]).done;
    console.log(r.stderr);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("needs a token with scope operator.approvals (or operator.admin)");
    gw.child.kill("SIGTERM");
  });

  it("approval-expiry-said: an approval nobody answers is one line on the client and in the gateway's log", async () => {
    const s = sandbox({ approvalTimeoutSeconds: 1 });
    const gw = await s.gateway(["--port", "0"]);
    const r = await s.agent(["-m", "run echo hi", "--url", gw.url, "--token", OPERATOR]).done;
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/✗ approval \S+ expired: nobody answered in time, so it was denied/);
    gw.child.kill("SIGTERM");
    const g = await gw.done;
    expect(g.stdout + g.stderr).toMatch(/exec approval expired/);
  });
});
