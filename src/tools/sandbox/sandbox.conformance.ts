import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createBuiltinTools } from "../builtin.js";
import type { Tool, ToolContext, ToolOutput } from "../types.js";
import type { SandboxBind, WorkspaceAccess } from "./settings.js";
import type { RunSandbox, Sandbox, SandboxBackend } from "./types.js";

/**
 * The Sandbox port's cases (Hono's common.case pattern), run by one `*.test.ts` per backend against the real thing
 * (bwrap, a Docker daemon) through the real exec and file tools, as a run uses them. `make` returns the backend, or
 * a one-line reason it cannot run here (the runner then skips the whole suite with that reason).
 */
export function sandboxConformance(name: string, make: () => Promise<SandboxBackend | string>): void {
  let backend: SandboxBackend | string;
  beforeAll(async () => {
    backend = await make();
  });
  const dirs: string[] = [];
  const opened: Array<{ b: SandboxBackend; scopeKey: string }> = [];
  afterEach(async () => {
    for (const o of opened.splice(0)) await o.b.remove(o.scopeKey);
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  const tools = new Map<string, Tool>(
    createBuiltinTools({
      exec: { parentEnv: { PATH: process.env.PATH, PROVIDER_KEY: "sk-conformance-secret", KEEP_ME: "kept" } },
    }).map((t) => [t.name, t]),
  );

  interface Opened {
    ws: string;
    stateDir: string;
    sandbox: Sandbox;
    call(tool: string, args: Record<string, unknown>): Promise<ToolOutput>;
  }

  let counter = 0;
  async function open(
    opts: {
      workspaceAccess?: WorkspaceAccess;
      binds?: SandboxBind[];
      env?: string[];
      timeoutSeconds?: number;
      scopeKey?: string;
      root?: string;
      network?: "none" | "host";
    } = {},
  ): Promise<Opened> {
    if (typeof backend === "string") throw new Error(backend);
    const root = opts.root ?? fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-sbx-conf-")));
    if (!opts.root) dirs.push(root);
    const stateDir = path.join(root, "state");
    const ws = path.join(root, "ws");
    fs.mkdirSync(ws, { recursive: true });
    const scopeKey = opts.scopeKey ?? `conformance-${process.pid}-${++counter}`;
    const scopeDir = path.join(stateDir, "sandboxes", scopeKey);
    fs.mkdirSync(scopeDir, { recursive: true });
    const sandbox = await backend.open({
      scopeKey,
      scopeDir,
      workspaceDir: ws,
      workspaceAccess: opts.workspaceAccess ?? "rw",
      network: opts.network ?? "none",
      binds: opts.binds ?? [],
      hidden: [stateDir],
      image: "debian:bookworm-slim",
    });
    opened.push({ b: backend, scopeKey });
    const run: RunSandbox = {
      sandbox,
      scope: "session",
      workspaceAccess: opts.workspaceAccess ?? "rw",
      network: "none",
      why: "conformance",
      env: opts.env ?? [],
      ...(opts.timeoutSeconds !== undefined ? { timeoutSeconds: opts.timeoutSeconds } : {}),
    };
    const ctx: ToolContext = { workspaceDir: ws, signal: new AbortController().signal, sandbox: run };
    return {
      ws,
      stateDir,
      sandbox,
      call: (tool, args) => tools.get(tool)!.execute(args, ctx),
    };
  }
  const sh = async (o: Opened, command: string) => String((await o.call("exec", { command })).content);
  const skipReason = () => (typeof backend === "string" ? backend : undefined);

  describe(`Sandbox conformance: ${name}`, () => {
    it("a command runs in /workspace and its output and exit code come back", async (t) => {
      if (skipReason()) return t.skip(skipReason());
      const o = await open();
      fs.writeFileSync(path.join(o.ws, "hello.txt"), "hi from the host\n");
      expect(await sh(o, "pwd; cat hello.txt; exit 3")).toBe("/workspace\nhi from the host\n\nexit code 3");
    });

    it("the system is read-only: touch /usr/x fails", async (t) => {
      if (skipReason()) return t.skip(skipReason());
      const o = await open();
      expect(await sh(o, "touch /usr/x")).toMatch(/Read-only file system[\s\S]*exit code 1$/);
      expect(fs.existsSync("/usr/x")).toBe(false);
    });

    it("network none: a server on the host's loopback cannot be reached; network host reaches it", async (t) => {
      if (skipReason()) return t.skip(skipReason());
      const server = net.createServer((s) => {
        s.on("error", () => {}); // the probe closes without reading everything: a reset is fine
        s.end("reached\n");
      });
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      const port = (server.address() as net.AddressInfo).port;
      try {
        const o = await open();
        // the host can: the same probe without a sandbox reaches it
        const probe = `exec 3<>/dev/tcp/127.0.0.1/${port} && head -c 7 <&3`;
        const out = await sh(o, `bash -c '${probe}' 2>&1; echo status=$?`);
        expect(out).not.toContain("reached");
        expect(out).toMatch(/status=1/);
        // network host: the same probe reaches it
        const shared = await open({ network: "host" });
        expect(await sh(shared, `bash -c '${probe}' 2>&1; echo status=$?`)).toMatch(/^reachedstatus=0/);
      } finally {
        server.close();
      }
    });

    it("a pid namespace of its own: /proc/1 is the sandbox's init, not the host's", async (t) => {
      if (skipReason()) return t.skip(skipReason());
      const o = await open();
      const hostInit = fs.readFileSync("/proc/1/cmdline", "utf8").replaceAll("\0", " ").trim();
      const inside = (await sh(o, "tr '\\0' ' ' < /proc/1/cmdline")).split("\n")[0].trim();
      expect(inside).not.toBe(hostInit);
      expect(inside).toMatch(/^(bwrap|docker-init|\/sbin\/docker-init|tini)/);
    });

    it("the environment is the scrubbed one: no provider key, only the names passed through", async (t) => {
      if (skipReason()) return t.skip(skipReason());
      const o = await open({ env: ["KEEP_ME"] });
      const env = await sh(o, "env");
      expect(env).not.toContain("sk-conformance-secret");
      expect(env).toContain("KEEP_ME=kept");
      expect(env).toContain("HOME=/workspace");
    });

    it("workspaceAccess rw: a file written inside is in the workspace afterwards, and write/edit work", async (t) => {
      if (skipReason()) return t.skip(skipReason());
      const o = await open({ workspaceAccess: "rw" });
      await sh(o, "echo made-inside > inside.txt");
      expect(fs.readFileSync(path.join(o.ws, "inside.txt"), "utf8")).toBe("made-inside\n");
      await o.call("write", { path: "/workspace/w.txt", content: "one" });
      await o.call("edit", { path: "w.txt", oldText: "one", newText: "two" });
      expect(fs.readFileSync(path.join(o.ws, "w.txt"), "utf8")).toBe("two");
    });

    it("workspaceAccess ro: exec cannot write and write/edit are refused, naming workspaceAccess", async (t) => {
      if (skipReason()) return t.skip(skipReason());
      const o = await open({ workspaceAccess: "ro" });
      fs.writeFileSync(path.join(o.ws, "keep.txt"), "original");
      expect(await sh(o, "echo x > keep.txt")).toMatch(/Read-only file system/);
      await expect(o.call("write", { path: "new.txt", content: "x" })).rejects.toThrow(
        /read-only in the sandbox.*workspaceAccess is "ro"/,
      );
      await expect(o.call("edit", { path: "keep.txt", oldText: "original", newText: "x" })).rejects.toThrow(
        /read-only/,
      );
      expect(fs.readFileSync(path.join(o.ws, "keep.txt"), "utf8")).toBe("original");
      expect(fs.existsSync(path.join(o.ws, "new.txt"))).toBe(false);
    });

    it("a symlink planted in the workspace to /etc/passwd reads the sandbox's view, never the host file", async (t) => {
      if (skipReason()) return t.skip(skipReason());
      const o = await open();
      fs.symlinkSync("/etc/passwd", path.join(o.ws, "pw"));
      const hostPasswd = fs.readFileSync("/etc/passwd", "utf8");
      const viaExec = await sh(o, "cat pw");
      expect(viaExec).not.toContain(hostPasswd.split("\n")[0]);
      if (o.sandbox.backend === "bubblewrap") {
        const viaRead = String((await o.call("read", { path: "pw" })).content);
        expect(viaRead).toContain("sandbox:x:");
        expect(viaRead).not.toContain(hostPasswd.split("\n")[0]);
        expect(viaExec).toContain("sandbox:x:");
      } else {
        // the container's /etc is its image's: not on the host, so the file tools refuse rather than read the host's
        await expect(o.call("read", { path: "pw" })).rejects.toThrow(/cannot reach/);
      }
      await expect(o.call("write", { path: "pw", content: "x" })).rejects.toThrow(/read-only|cannot reach/);
      expect(fs.readFileSync("/etc/passwd", "utf8")).toBe(hostPasswd);
    });

    it("the state dir is never shown, even when the workspace holds it", async (t) => {
      if (skipReason()) return t.skip(skipReason());
      // the workspace is the state dir's parent (a user who pointed the workspace at their home)
      const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-sbx-conf-")));
      dirs.push(root);
      const b = backend as SandboxBackend;
      const stateDir = path.join(root, "state");
      const scopeKey = `conformance-holder-${process.pid}-${++counter}`;
      const scopeDir = path.join(stateDir, "sandboxes", scopeKey);
      fs.mkdirSync(scopeDir, { recursive: true });
      fs.writeFileSync(path.join(stateDir, "secret.json"), "token");
      const holder = await b.open({
        scopeKey,
        scopeDir,
        workspaceDir: root,
        workspaceAccess: "rw",
        network: "none",
        binds: [],
        hidden: [stateDir],
        image: "debian:bookworm-slim",
      });
      opened.push({ b, scopeKey });
      const ctx: ToolContext = {
        workspaceDir: root,
        signal: new AbortController().signal,
        sandbox: { sandbox: holder, scope: "agent", workspaceAccess: "rw", network: "none", why: "t", env: [] },
      };
      const out = String(
        (await tools.get("exec")!.execute({ command: "cat state/secret.json; ls -A state" }, ctx)).content,
      );
      expect(out).toMatch(/No such file or directory/);
      expect(out).not.toContain("token");
      await expect(tools.get("read")!.execute({ path: "state/secret.json" }, ctx)).rejects.toThrow(/hidden/);
    });

    it("/tmp is the sandbox's own: a file there stays for the next command and is not the host's /tmp", async (t) => {
      if (skipReason()) return t.skip(skipReason());
      const o = await open();
      const name = `loopgate-conformance-${process.pid}-${Date.now()}`;
      await sh(o, `echo kept > /tmp/${name}`);
      expect(await sh(o, `cat /tmp/${name}`)).toBe("kept\n\nexit code 0");
      expect(fs.existsSync(path.join("/tmp", name))).toBe(false);
    });

    it("binds: a read-only bind is readable inside and refuses writes", async (t) => {
      if (skipReason()) return t.skip(skipReason());
      const data = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-sbx-bind-")));
      dirs.push(data);
      fs.writeFileSync(path.join(data, "ref.txt"), "reference");
      const o = await open({ binds: [{ host: data, inside: "/data", writable: false }] });
      expect(await sh(o, "cat /data/ref.txt; touch /data/x")).toMatch(/^reference[\s\S]*Read-only file system/);
      expect(String((await o.call("read", { path: "/data/ref.txt" })).content)).toBe("reference");
      await expect(o.call("write", { path: "/data/y", content: "x" })).rejects.toThrow(/read-only/);
    });

    it("timeoutSeconds ends a command that runs longer, and everything it started inside", async (t) => {
      if (skipReason()) return t.skip(skipReason());
      const o = await open({ timeoutSeconds: 1 });
      const out = await o.call("exec", { command: "sleep 30 & sleep 30; echo never" });
      expect(out.isError).toBe(true);
      expect(String(out.content)).toMatch(/timed out after 1s$/);
      expect(String(out.content)).not.toContain("never");
    });
  });

  afterAll(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
}
