/*
 * Where `loopgate gateway` takes its token from, as a user starts it: real child processes of dist/cli/main.js,
 * a temp state dir and HOME, port 0. `--token` puts the secret in the process list; the environment and a file
 * do not.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { RawPeer } from "../fixtures/gateway/harness.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const cli = path.join(root, "dist", "cli", "main.js");

const cleanup: Array<() => void> = [];
afterAll(() => {
  for (const fn of cleanup.splice(0)) fn();
});

function sandbox(): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-token-")));
  cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("LOOPGATE_")) env[k] = v;
  Object.assign(env, { LOOPGATE_STATE_DIR: path.join(dir, "state"), HOME: dir, NO_COLOR: "1" });
  return { dir, env };
}

interface Gateway {
  child: ChildProcess;
  url?: string;
  code: Promise<number | null>;
  stderr: () => string;
}

/** Starts `loopgate gateway`; `url` is set once it listens, `code` resolves when it exits (or is stopped). */
async function startGateway(args: string[], env: NodeJS.ProcessEnv): Promise<Gateway> {
  const child = spawn(process.execPath, [cli, "gateway", "--port", "0", ...args], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  cleanup.push(() => child.kill("SIGKILL"));
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const code = new Promise<number | null>((resolve) => child.on("close", resolve));
  const url = await new Promise<string | undefined>((resolve) => {
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (c: string) => {
      out += c;
      const m = /listening on (ws:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    void code.then(() => resolve(undefined));
  });
  return { child, url, code, stderr: () => stderr };
}

/** Whether a `connect` with `token` is accepted (the URL's host is replaced by loopback for a 0.0.0.0 bind). */
async function accepts(url: string, token: string | undefined): Promise<boolean> {
  const peer = await RawPeer.open(url.replace("0.0.0.0", "127.0.0.1"));
  try {
    const hello = await peer.connect(token === undefined ? {} : { token });
    return hello.ok === true;
  } finally {
    peer.close();
  }
}

async function stop(gw: Gateway): Promise<number | null> {
  gw.child.kill("SIGTERM");
  return gw.code;
}

describe("the gateway token can only be given on the command line", () => {
  it("takes the token from LOOPGATE_GATEWAY_TOKEN", async () => {
    const { env } = sandbox();
    const gw = await startGateway([], { ...env, LOOPGATE_GATEWAY_TOKEN: "from-env" });
    expect(gw.url, gw.stderr()).toBeDefined();
    expect(await accepts(gw.url!, undefined)).toBe(false);
    expect(await accepts(gw.url!, "from-env")).toBe(true);
    expect(await stop(gw)).toBe(0);
  });

  it("takes the token from --token-file (one line, the trailing newline dropped) over the environment", async () => {
    const { dir, env } = sandbox();
    const file = path.join(dir, "gateway.token");
    fs.writeFileSync(file, "from-file\n", { mode: 0o600 });
    const gw = await startGateway(["--token-file", file], { ...env, LOOPGATE_GATEWAY_TOKEN: "from-env" });
    expect(gw.url, gw.stderr()).toBeDefined();
    expect(await accepts(gw.url!, "from-env")).toBe(false);
    expect(await accepts(gw.url!, "from-file")).toBe(true);
    expect(await stop(gw)).toBe(0);
  });

  it("a --token-file that is missing or empty is refused, naming the file (exit 2)", async () => {
    const { dir, env } = sandbox();
    const missing = path.join(dir, "nope.token");
    const noFile = await startGateway(["--token-file", missing], env);
    expect(await noFile.code).toBe(2);
    expect(noFile.stderr()).toContain(`--token-file ${missing}: cannot read it (ENOENT)`);
    const empty = path.join(dir, "empty.token");
    fs.writeFileSync(empty, "\n");
    const emptyFile = await startGateway(["--token-file", empty], env);
    expect(await emptyFile.code).toBe(2);
    expect(emptyFile.stderr()).toContain(`--token-file ${empty}: the file is empty`);
  });

  it("--token on a non-loopback bind warns that it shows in the process list; on loopback it does not", async () => {
    const { env } = sandbox();
    const lan = await startGateway(["--bind", "lan", "--token", "t0ken"], env);
    expect(lan.url, lan.stderr()).toBeDefined();
    expect(lan.stderr()).toContain("warning: --token on 0.0.0.0 shows the gateway token in the process list (ps)");
    expect(lan.stderr()).toContain("use LOOPGATE_GATEWAY_TOKEN or --token-file PATH instead");
    expect(await stop(lan)).toBe(0);
    const loopback = await startGateway(["--token", "t0ken"], env);
    expect(loopback.url, loopback.stderr()).toBeDefined();
    expect(await stop(loopback)).toBe(0);
    expect(loopback.stderr()).not.toContain("process list");
  });
});
