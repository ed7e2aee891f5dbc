/*
 * `loopgate gateway` runs under the Node flags that bound its memory (src/cli/gateway-flags.ts): started as a user
 * starts it (dist/cli/main.js, run `npm run build` first), the process it ends up as is read from /proc (Linux).
 */
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  GATEWAY_NODE_ENV,
  GATEWAY_NODE_FLAGS,
  missingGatewayFlags,
  reexecWithGatewayFlags,
} from "../../src/cli/gateway-flags.js";
import { cliSandbox, useCliSandboxes } from "../fixtures/cli/sandbox.js";

useCliSandboxes();

const environ = (pid: number) => fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter(Boolean);
const cmdline = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
const childrenOf = (pid: number) =>
  fs.readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
// Node before 22.15 has no process.execve: a preload that removes it makes this Node take the same path
function withoutExecve(dir: string): string {
  const preload = path.join(dir, "no-execve.mjs");
  fs.writeFileSync(preload, "delete process.execve;\n");
  return `--import=${preload}`;
}

async function busyPort(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

describe("loopgate gateway's Node flags", () => {
  it("the gateway process runs with the memory flags, keeps its pid, and still drains and exits 0 on SIGTERM", async () => {
    const s = cliSandbox({ prefix: "gwflags" });
    const gw = await s.gateway();
    // process.execve replaced the process: the pid the supervisor started is the gateway
    expect(cmdline(gw.child.pid!)).toEqual(expect.arrayContaining([...GATEWAY_NODE_FLAGS]));
    // the environment it started with (what glibc read); it is removed again for the gateway's own children
    expect(environ(gw.child.pid!)).toEqual(
      expect.arrayContaining(Object.entries(GATEWAY_NODE_ENV).map(([k, v]) => `${k}=${v}`)),
    );
    gw.child.kill("SIGTERM");
    const stopped = await gw.done;
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).not.toMatch(/ExperimentalWarning/);
  });

  it("LOOPGATE_NO_REEXEC=1 runs the gateway with Node's defaults", async () => {
    const s = cliSandbox({ prefix: "gwflags" });
    const gw = await s.gateway(["--port", "0"], { LOOPGATE_NO_REEXEC: "1" });
    for (const flag of GATEWAY_NODE_FLAGS) expect(cmdline(gw.child.pid!)).not.toContain(flag);
    for (const name of Object.keys(GATEWAY_NODE_ENV))
      expect(environ(gw.child.pid!).some((e) => e.startsWith(`${name}=`))).toBe(false);
    gw.child.kill("SIGTERM");
    expect((await gw.done).code).toBe(0);
  });

  it("a user's own --max-semi-space-size in NODE_OPTIONS and MALLOC_ARENA_MAX are kept, not overridden", async () => {
    const s = cliSandbox({ prefix: "gwflags" });
    const gw = await s.gateway(["--port", "0"], { NODE_OPTIONS: "--max-semi-space-size=16", MALLOC_ARENA_MAX: "8" });
    expect(cmdline(gw.child.pid!).some((a) => a.startsWith("--max-semi-space-size"))).toBe(false);
    expect(environ(gw.child.pid!)).toContain("MALLOC_ARENA_MAX=8");
    gw.child.kill("SIGTERM");
    expect((await gw.done).code).toBe(0);
  });

  it("a gateway that cannot start exits with the same code as without the re-exec", async () => {
    const busy = await busyPort();
    try {
      const s = cliSandbox({ prefix: "gwflags" });
      const args = ["gateway", "--config", s.config, "--port", String(busy.port)];
      const plain = await s.run(args, { env: { LOOPGATE_NO_REEXEC: "1" } }).done;
      expect(plain.code).not.toBe(0);
      expect((await s.run(args).done).code).toBe(plain.code);
    } finally {
      await busy.close();
    }
  });

  describe("on a Node without process.execve (a child process runs the gateway)", () => {
    it("the child runs with the flags; SIGTERM to the parent drains it and both exit 0", async () => {
      const s = cliSandbox({ prefix: "gwflags" });
      const gw = await s.gateway(["--port", "0"], { NODE_OPTIONS: withoutExecve(s.tmp) });
      const children = childrenOf(gw.child.pid!);
      expect(children).toHaveLength(1);
      expect(cmdline(children[0]!)).toEqual(expect.arrayContaining([...GATEWAY_NODE_FLAGS]));
      gw.child.kill("SIGTERM");
      const stopped = await gw.done;
      expect(stopped.code).toBe(0);
      expect(fs.readFileSync(path.join(s.tmp, "state", "logs", "gateway.log"), "utf8")).toMatch(/SIGTERM, draining/);
    });

    it("the child's exit code is the parent's", async () => {
      const busy = await busyPort();
      try {
        const s = cliSandbox({ prefix: "gwflags" });
        const args = ["gateway", "--config", s.config, "--port", String(busy.port)];
        const plain = await s.run(args, { env: { LOOPGATE_NO_REEXEC: "1" } }).done;
        expect(plain.code).not.toBe(0);
        expect((await s.run(args, { env: { NODE_OPTIONS: withoutExecve(s.tmp) } }).done).code).toBe(plain.code);
      } finally {
        await busy.close();
      }
    });
  });

  it("the process the re-exec started removes the variables it added, so the gateway's children do not inherit them", async () => {
    const saved = { ...process.env };
    try {
      process.env.LOOPGATE_REEXEC_ADDED_ENV = "MALLOC_ARENA_MAX";
      process.env.MALLOC_ARENA_MAX = "2";
      expect(await reexecWithGatewayFlags()).toBe(false);
      expect(process.env.MALLOC_ARENA_MAX).toBeUndefined();
      expect(process.env.LOOPGATE_REEXEC_ADDED_ENV).toBeUndefined();
    } finally {
      process.env = saved;
    }
  });

  it("only the flags the user did not set are added, whatever their spelling", () => {
    expect(missingGatewayFlags([], undefined)).toEqual([...GATEWAY_NODE_FLAGS]);
    expect(missingGatewayFlags(["--max_semi_space_size=1"], undefined)).toEqual([]);
    expect(missingGatewayFlags([], '--max-semi-space-size=32 --title="a b"')).toEqual([]);
    expect(missingGatewayFlags(["--expose-gc"], "--enable-source-maps")).toEqual([...GATEWAY_NODE_FLAGS]);
  });
});
