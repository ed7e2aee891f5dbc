/*
 * `loopgate dashboard` against a real `loopgate gateway` child: the console URL from the config's gateway.port, the
 * token hint (never the token), the browser opener run with the URL only (a fake xdg-open on PATH records its argv
 * and environment), and a clear exit 2 when no gateway answers.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeModelServer } from "../../src/testing/fake-model-server.js";
import {
  cli,
  consoleModelServer,
  FULL_TOKEN,
  type GatewayChild,
  startGatewayChild,
} from "../fixtures/console/browser.js";

let model: FakeModelServer;
let gw: GatewayChild;
let tmp: string;

beforeAll(async () => {
  model = await consoleModelServer();
  gw = await startGatewayChild(model);
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-dashboard-")));
});

afterAll(async () => {
  await gw?.dispose();
  await model?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function dashboard(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string; err: string }> {
  const clean: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^(LOOPGATE_|OPENCLAW_)/.test(k)) clean[k] = v;
  const proc = spawn(process.execPath, [cli, "dashboard", ...args], {
    env: { ...clean, HOME: tmp, NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  proc.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
  proc.stderr.setEncoding("utf8").on("data", (c: string) => (err += c));
  return new Promise((resolve) => proc.on("exit", (code) => resolve({ code, out, err })));
}

/** A config that names the child gateway's port and token, as a user's would. */
function userConfig(): string {
  const file = path.join(tmp, "loopgate.json5");
  fs.writeFileSync(file, JSON.stringify({ gateway: { port: gw.port, auth: { token: FULL_TOKEN } } }));
  return file;
}

describe("loopgate dashboard", () => {
  it("prints the running gateway's console URL from gateway.port and where the token comes from, never the token", async () => {
    const config = userConfig();
    const res = await dashboard(["--no-open", "--config", config], {});
    expect(res.code).toBe(0);
    expect(res.out).toBe(
      `console: ${gw.httpUrl}\ntoken: the console asks for it once per tab: use gateway.auth.token from ${config}\n`,
    );
    expect(res.out + res.err).not.toContain(FULL_TOKEN);
  });

  it("opens the URL with xdg-open, passing it the URL alone and none of Loopgate's variables or secrets", async () => {
    const bin = path.join(tmp, "bin");
    fs.mkdirSync(bin, { recursive: true });
    const record = path.join(tmp, "opened.json");
    fs.writeFileSync(
      path.join(bin, "xdg-open"),
      `#!${process.execPath}\nrequire("node:fs").writeFileSync(${JSON.stringify(record)}, JSON.stringify({ argv: process.argv.slice(2), env: process.env }));\n`,
      { mode: 0o755 },
    );
    const res = await dashboard(["--url", gw.url], {
      PATH: `${bin}${path.delimiter}${process.env.PATH}`,
      LOOPGATE_GATEWAY_TOKEN: FULL_TOKEN,
      OPENAI_API_KEY: "sk-should-not-leak",
    });
    expect(res.code).toBe(0);
    expect(res.out).toContain(`console: ${gw.httpUrl}\n`);
    expect(res.out).toContain("use LOOPGATE_GATEWAY_TOKEN");
    expect(res.out).toContain("opened with xdg-open");
    // the opener runs detached: wait (bounded) for its record
    for (let i = 0; i < 100 && !fs.existsSync(record); i++) await new Promise((r) => setTimeout(r, 50));
    const opened = JSON.parse(fs.readFileSync(record, "utf8")) as { argv: string[]; env: Record<string, string> };
    expect(opened.argv).toEqual([gw.httpUrl]);
    const leaked = JSON.stringify(opened.env);
    expect(leaked).not.toContain(FULL_TOKEN);
    expect(leaked).not.toContain("sk-should-not-leak");
    expect(Object.keys(opened.env).filter((k) => k.startsWith("LOOPGATE_"))).toEqual([]);
  });

  it("says plainly that no gateway answers, and exits 2", async () => {
    // a port nothing listens on: taken and released
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const res = await dashboard(["--no-open", "--url", `ws://127.0.0.1:${port}`], {});
    expect(res.code).toBe(2);
    expect(res.err).toContain(`no gateway answers at http://127.0.0.1:${port}`);
    expect(res.err).toContain("loopgate gateway");
    expect(res.out).toBe("");
  });
});
