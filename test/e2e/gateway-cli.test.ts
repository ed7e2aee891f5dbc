/*
 * `loopgate gateway` and `loopgate agent` (without --local) as a user runs them: real child processes of
 * dist/cli/main.js (run `npm run build` first), a temp state dir and HOME, a temp config whose model is the
 * scripted provider playing test/fixtures/gateway/*.script.json5. Port 0 everywhere; the gateway prints its URL.
 */
import net from "node:net";
import { describe, expect, it } from "vitest";
import { GatewayClient } from "../../src/client/gateway-client.js";
import { cliSandbox, onCleanup, useCliSandboxes } from "../fixtures/cli/sandbox.js";

useCliSandboxes();

function sandbox(script = "reply.script.json5", extraConfig: Record<string, unknown> = {}) {
  return cliSandbox({ prefix: "gwcli", script, extraConfig });
}

describe("loopgate gateway + loopgate agent through it", () => {
  it("streams a reply through the gateway and exits 0; --json shows the events and the result", async () => {
    const s = sandbox();
    const gw = await s.gateway();
    const plain = await s.agent(["--message", "hi", "--url", gw.url]).done;
    expect(plain.stderr).not.toMatch(/^\s{4}at /m);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain("Hello from the gateway.");
    expect(plain.stderr).toMatch(/— ok · 16 tokens/);

    const json = await s.agent(["--message", "hi again", "--url", gw.url, "--json"]).done;
    expect(json.code).toBe(0);
    const lines = json.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; stream?: string; seq?: number; status?: string; runId: string });
    const events = lines.filter((l) => l.type === "event");
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.some((e) => e.stream === "assistant")).toBe(true);
    expect(lines.at(-1)).toMatchObject({ type: "result", status: "ok", summary: "completed" });
    expect(new Set(lines.map((l) => l.runId)).size).toBe(1);

    gw.child.kill("SIGTERM");
    const stopped = await gw.done;
    expect(stopped.code).toBe(0);
    expect(stopped.stdout).toMatch(/state: .*state/);
  });

  it("finds the gateway from LOOPGATE_GATEWAY_URL and answers health within a second of starting", async () => {
    const s = sandbox();
    const gw = await s.gateway();
    const client = await GatewayClient.connect({ url: gw.url, client: { id: "test", mode: "test" } });
    expect(await client.request("health")).toMatchObject({ ok: true });
    const ms = Number(process.hrtime.bigint() - gw.started) / 1e6;
    // informational (printed, not asserted): process spawn to a health answer over WebSocket
    console.log(`gateway start-to-health: ${ms.toFixed(0)} ms`);
    await client.close();
    const r = await s.agent(["--message", "hi"], { LOOPGATE_GATEWAY_URL: gw.url }).done;
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Hello from the gateway.");
    gw.child.kill("SIGINT");
    expect((await gw.done).code).toBe(0);
  });

  it("gateway-banner-prints-console-url", async () => {
    const s = sandbox();
    const gw = await s.gateway();
    gw.child.kill("SIGTERM");
    const stopped = await gw.done;
    // the banner: everything before the first empty line (its length grows as lines are added: log, console)
    const banner = stopped.stdout.split("\n\n")[0] ?? "";
    console.log(`gateway banner:\n${banner}`);
    expect(stopped.code).toBe(0);
    // dist/ was built with the console, so the banner names where to open it: the gateway's own port, over http
    expect(banner).toContain(`console: ${gw.url.replace(/^ws:/, "http:")}/`);
  });

  it("with no gateway running, says so in one line, suggests --local, and exits 2", async () => {
    const s = sandbox();
    // a port that was just free: nothing listens there
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", () => r()));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const r = await s.agent(["--message", "hi", "--url", `ws://127.0.0.1:${port}`]).done;
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/no gateway reachable at ws:\/\/127\.0\.0\.1:\d+.*loopgate gateway.*--local/);
  });

  it("Ctrl-C in the CLI aborts the run on the gateway (exit 130, run recorded as aborted)", async () => {
    const s = sandbox("stall.script.json5");
    const gw = await s.gateway();
    let interrupted = false;
    const r = await s.agent(["--message", "slow", "--url", gw.url], {}, (soFar, child) => {
      // once: a second Ctrl-C means "exit now without waiting"
      if (!interrupted && soFar.includes("working on it")) {
        interrupted = true;
        child.kill("SIGINT");
      }
    }).done;
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/interrupting/);
    expect(r.stderr).toMatch(/aborted/);
    const client = await GatewayClient.connect({ url: gw.url, client: { id: "test", mode: "test" } });
    const sessions = (await client.request<{ sessions: Array<{ key: string }> }>("sessions.list")).sessions;
    expect(sessions.map((x) => x.key)).toEqual(["agent:main:main"]);
    const history = await client.request<{ messages: Array<{ runId?: string }> }>("chat.history", {
      sessionKey: "main",
    });
    const runId = history.messages[0].runId!;
    expect(await client.agentWait(runId)).toMatchObject({ status: "error", stopReason: "aborted" });
    await client.close();
    gw.child.kill("SIGTERM");
    expect((await gw.done).code).toBe(0);
  });

  it("on SIGTERM, connected clients get a shutdown event and the process exits 0", async () => {
    const s = sandbox();
    const gw = await s.gateway();
    const client = await GatewayClient.connect({ url: gw.url, client: { id: "test", mode: "test" } });
    const shutdown = new Promise((resolve) => client.on("shutdown", (p) => resolve(p)));
    const closed = new Promise((resolve) => client.onClose(resolve));
    gw.child.kill("SIGTERM");
    expect(await shutdown).toMatchObject({ reason: expect.stringContaining("SIGTERM") });
    expect(await closed).toMatchObject({ code: 1001 });
    const r = await gw.done;
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/stopped/);
  });

  it("drains and exits 0 even when SIGTERM arrives the moment it starts printing", async () => {
    const s = sandbox();
    let sent = false;
    const g = s.run(["gateway", "--config", s.config, "--port", "0"], {
      onStdout: (_soFar, child) => {
        if (!sent) {
          sent = true;
          child.kill("SIGTERM");
        }
      },
    });
    const r = await g.done;
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/SIGTERM, draining[\s\S]*stopped/);
  });

  it("refuses to bind beyond loopback without a token (exit 2), and starts with one", async () => {
    const s = sandbox();
    const refused = await s.run(["gateway", "--config", s.config, "--port", "0", "--bind", "lan"]).done;
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/refusing to bind 0\.0\.0\.0.*gateway\.auth\.token.*--token/);
    const gw = await s.gateway(["--port", "0", "--bind", "lan", "--token", "t0ken"]);
    expect(gw.url).toMatch(/^ws:\/\/0\.0\.0\.0:\d+$/);
    const port = gw.url.split(":").at(-1);
    const denied = await s.agent(["--message", "hi", "--url", `ws://127.0.0.1:${port}`]).done;
    expect(denied.code).toBe(2);
    expect(denied.stderr).toMatch(/refused the connection: params\.auth\.token/);
    const ok = await s.agent(["--message", "hi", "--url", `ws://127.0.0.1:${port}`], {
      LOOPGATE_GATEWAY_TOKEN: "t0ken",
    }).done;
    expect(ok.code).toBe(0);
    gw.child.kill("SIGTERM");
    expect((await gw.done).code).toBe(0);
  });

  it("takes the port from --port over LOOPGATE_GATEWAY_PORT over gateway.port", async () => {
    // gateway.port names a port that is taken: using it would fail to start
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", () => r()));
    onCleanup(() => taken.close());
    const busyPort = (taken.address() as net.AddressInfo).port;
    const s = sandbox("reply.script.json5", { gateway: { port: busyPort } });

    const fromConfig = await s.run(["gateway", "--config", s.config]).done;
    expect(fromConfig.code).toBe(2);
    expect(fromConfig.stderr).toMatch(new RegExp(`port ${busyPort} .*already in use`));

    const fromEnv = await s.gateway([], { LOOPGATE_GATEWAY_PORT: "0" });
    expect(fromEnv.url).not.toContain(`:${busyPort}`);
    fromEnv.child.kill("SIGTERM");
    await fromEnv.done;

    const fromFlag = await s.gateway(["--port", "0"], { LOOPGATE_GATEWAY_PORT: String(busyPort) });
    expect(fromFlag.url).not.toContain(`:${busyPort}`);
    fromFlag.child.kill("SIGTERM");
    await fromFlag.done;

    const badFlag = await s.run(["gateway", "--config", s.config, "--port", "http"]).done;
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toMatch(/--port: expected a port number/);
  });
});

describe("loopgate health and runs ended by the gateway", () => {
  it("health asks the running gateway and prints a one-line summary (or its answer with --json)", async () => {
    const s = sandbox();
    const gw = await s.gateway();
    const [plain, json] = await Promise.all([
      s.run(["health", "--config", s.config, "--url", gw.url]).done,
      s.run(["health", "--config", s.config, "--url", gw.url, "--json"]).done,
    ]);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toMatch(
      new RegExp(
        `^gateway ${gw.url} ok · loopgate \\S+ · up \\d+ s · 0 active runs · 0 queued inputs · 0 sessions\\n$`,
      ),
    );
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: true, activeRuns: 0, sessions: 0 });
    gw.child.kill("SIGTERM");
    expect((await gw.done).code).toBe(0);
  });

  it("health with no gateway running says so in one line and exits 2", async () => {
    const s = sandbox();
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", () => r()));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const r = await s.run(["health", "--config", s.config, "--url", `ws://127.0.0.1:${port}`]).done;
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/no gateway reachable at ws:\/\/127\.0\.0\.1:\d+/);
  });

  it("a run stopped by another client exits 1 and says the gateway aborted it (130 is only for Ctrl-C)", async () => {
    const s = sandbox("stall.script.json5");
    const gw = await s.gateway();
    const client = await GatewayClient.connect({ url: gw.url, client: { id: "test", mode: "test" } });
    let stopped = false;
    const r = await s.agent(["--message", "slow", "--url", gw.url], {}, (soFar) => {
      if (!stopped && soFar.includes("working on it")) {
        stopped = true;
        void client.request("chat.abort", { sessionKey: "agent:main:main" });
      }
    }).done;
    expect(stopped).toBe(true);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^— aborted by the gateway · .*aborted by request$/m);
    expect(r.stderr).not.toMatch(/interrupting/);
    await client.close();
    gw.child.kill("SIGTERM");
    expect((await gw.done).code).toBe(0);
  });
});
