import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { ManualClock } from "../../testing/manual-clock.js";
import { BubblewrapBackend } from "./bubblewrap.js";
import { DockerBackend } from "./docker.js";
import { Sandboxes } from "./sandboxes.js";
import type { Sandbox, SandboxBackend, SandboxSpec, ShellProcess } from "./types.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-sandboxes-")));
  dirs.push(d);
  return d;
}

/**
 * A backend that records what it was asked (the Docker daemon is an edge this machine does not have): it stands in
 * for the docker backend where the manager's own rules (idle removal, reset) are under test.
 */
class RecordingBackend implements SandboxBackend {
  readonly removed: string[] = [];
  readonly opened: SandboxSpec[] = [];
  constructor(readonly kind: "bubblewrap" | "docker") {}
  async check() {}
  async open(spec: SandboxSpec): Promise<Sandbox> {
    this.opened.push(spec);
    return {
      backend: this.kind,
      scopeKey: spec.scopeKey,
      location: spec.scopeDir,
      view: { workdir: "/workspace", mounts: [], symlinks: new Map(), hidden: [], backend: this.kind },
      spawnShell: () => {
        throw new Error("not started in these tests");
      },
    } satisfies Sandbox as Sandbox & { spawnShell(): ShellProcess };
  }
  async remove(scopeKey: string) {
    this.removed.push(scopeKey);
  }
}

function sandboxes(sandbox: Record<string, unknown>, extra: Record<string, unknown> = {}, backends = {}) {
  const stateDir = tempDir();
  const config = parseConfig({ agents: { defaults: { sandbox }, ...extra } });
  const clock = new ManualClock();
  return { s: new Sandboxes({ config, stateDir, env: process.env, clock, backends }), stateDir, clock };
}

describe("which sessions are sandboxed", () => {
  it("mode non-main sandboxes every session but the agent's main one (cron and hook sessions too)", () => {
    const { s } = sandboxes({ mode: "non-main" });
    expect(s.decide("main", "agent:main:main")).toMatchObject({
      sandboxed: false,
      why: 'agents.defaults.sandbox.mode is "non-main" and this is agent "main"\'s main session',
    });
    expect(s.decide("main", "agent:main:support-42").sandboxed).toBe(true);
    expect(s.decide("main", "cron:nightly").sandboxed).toBe(true);
  });

  it("an agent's own sandbox keys win over the defaults, and explanations name the agent's key", () => {
    const { s } = sandboxes({ mode: "all" }, { list: [{ id: "main" }, { id: "ops", sandbox: { mode: "off" } }] });
    expect(s.decide("main", "agent:main:x").sandboxed).toBe(true);
    expect(s.decide("ops", "agent:ops:x")).toMatchObject({
      sandboxed: false,
      why: 'agents.list[1].sandbox.mode is "off"',
    });
  });

  it("scope decides who shares a sandbox: one per session, per agent, or one for all", () => {
    const { s } = sandboxes({ mode: "all", scope: "session" });
    const one = s.describeSession("main", "agent:main:a");
    const two = s.describeSession("main", "agent:main:b");
    expect(one?.scopeKey).not.toBe(two?.scopeKey);
    expect(one?.scopeKey).toMatch(/^session-main-[0-9a-f]{16}$/);
    expect(sandboxes({ mode: "all", scope: "agent" }).s.describeSession("main", "agent:main:a")?.scopeKey).toBe(
      "agent-main",
    );
    expect(sandboxes({ mode: "all", scope: "shared" }).s.describeSession("main", "agent:main:a")?.scopeKey).toBe(
      "shared",
    );
    expect(sandboxes({ mode: "off" }).s.describeSession("main", "agent:main:a")).toBeNull();
  });
});

describe("the load-time check", () => {
  it("a config asking for bubblewrap where bwrap is missing fails, naming the key and the fix", async () => {
    const { s } = sandboxes(
      { mode: "all" },
      {},
      { bubblewrap: new BubblewrapBackend({ bwrap: "/nonexistent/bwrap" }) },
    );
    await expect(s.check()).rejects.toThrow(
      /agents\.defaults\.sandbox\.backend "bubblewrap": .*bwrap binary, which is not installed.*apt-get install bubblewrap/,
    );
  });

  it("mode off checks nothing: a machine without bwrap still starts", async () => {
    const { s } = sandboxes(
      { mode: "off" },
      {},
      { bubblewrap: new BubblewrapBackend({ bwrap: "/nonexistent/bwrap" }) },
    );
    await expect(s.check()).resolves.toBeUndefined();
  });

  it("docker where no daemon answers is a load-time error saying so", async () => {
    // a docker CLI pointed at a socket nobody listens on: the situation of a machine without a daemon
    const docker = new DockerBackend({ env: { ...process.env, DOCKER_HOST: `unix://${tempDir()}/none.sock` } });
    const { s } = sandboxes({ mode: "all", backend: "docker" }, {}, { docker });
    await expect(s.check()).rejects.toThrow(/agents\.defaults\.sandbox\.backend "docker": no Docker daemon answers/);
  });

  it("limits bubblewrap cannot enforce are refused, naming the agent's key", async () => {
    const { s } = sandboxes(
      { mode: "all" },
      { list: [{ id: "main", sandbox: { cpus: 1 } }] },
      { bubblewrap: new RecordingBackend("bubblewrap") },
    );
    await expect(s.check()).rejects.toThrow(
      /agents\.list\[0\]\.sandbox\.cpus: the bubblewrap backend cannot enforce it/,
    );
    const pids = sandboxes({ mode: "all", pids: 64 }, {}, { bubblewrap: new RecordingBackend("bubblewrap") }).s;
    await expect(pids.check()).rejects.toThrow(
      /agents\.defaults\.sandbox\.pids: the bubblewrap backend cannot enforce it/,
    );
    // docker can: the same keys pass its check
    const docker = sandboxes(
      { mode: "all", backend: "docker", pids: 64, cpus: 1 },
      {},
      { docker: new RecordingBackend("docker") },
    ).s;
    await expect(docker.check()).resolves.toBeUndefined();
  });

  it("a bind holding the state dir is refused: the sandbox must never see it", async () => {
    const stateParent = tempDir();
    const stateDir = path.join(stateParent, "state");
    fs.mkdirSync(stateDir);
    const config = parseConfig({
      agents: { defaults: { sandbox: { mode: "all", binds: [`${stateParent}:/data:ro`] } } },
    });
    const s = new Sandboxes({
      config,
      stateDir,
      env: process.env,
      clock: new ManualClock(),
      backends: { bubblewrap: new RecordingBackend("bubblewrap") },
    });
    await expect(s.check()).rejects.toThrow(/agents\.defaults\.sandbox\.binds\[0\]: .* holds the state dir/);
  });
});

describe("scope lifecycle", () => {
  it("a session scope with workspaceAccess none gets a fresh dir in docker.image; its end removes the dir and the container", async () => {
    const docker = new RecordingBackend("docker");
    const { s, stateDir } = sandboxes(
      { mode: "all", scope: "session", backend: "docker", docker: { image: "alpine:3.20" } },
      {},
      { docker },
    );
    const ws = tempDir();
    const run = await s.forRun("main", "agent:main:a", ws);
    const spec = docker.opened[0];
    expect(spec.image).toBe("alpine:3.20");
    expect(spec.workspaceDir).toBe(path.join(stateDir, "sandboxes", run!.sandbox.scopeKey, "workspace"));
    fs.writeFileSync(path.join(spec.workspaceDir, "note.txt"), "x");
    await s.sessionEnded("main", "agent:main:a");
    expect(fs.existsSync(spec.workspaceDir)).toBe(false);
    expect(docker.removed).toEqual([run!.sandbox.scopeKey]);
    await s.forRun("main", "agent:main:a", ws);
    expect(fs.readdirSync(docker.opened[1].workspaceDir)).toEqual([]);
  });

  it("an agent scope outlives one session's reset", async () => {
    const b = new RecordingBackend("bubblewrap");
    const { s } = sandboxes({ mode: "all", scope: "agent" }, {}, { bubblewrap: b });
    await s.forRun("main", "agent:main:a", tempDir());
    await s.sessionEnded("main", "agent:main:a");
    expect(b.removed).toEqual([]);
    expect((await s.list()).map((e) => e.scopeKey)).toEqual(["agent-main"]);
  });

  it("a container nobody used for docker.idleMinutes is removed; one in use stays", async () => {
    const docker = new RecordingBackend("docker");
    const { s, clock } = sandboxes(
      { mode: "all", scope: "session", backend: "docker", docker: { idleMinutes: 10 } },
      {},
      { docker },
    );
    const ws = tempDir();
    await s.forRun("main", "agent:main:idle", ws);
    await s.forRun("main", "agent:main:busy", ws);
    const settle = () => new Promise((r) => setImmediate(r));
    clock.advance(9 * 60_000);
    await settle();
    await s.forRun("main", "agent:main:busy", ws);
    expect(docker.removed).toEqual([]);
    clock.advance(2 * 60_000);
    await settle();
    expect(docker.removed).toEqual([s.describeSession("main", "agent:main:idle")!.scopeKey]);
    s.close();
  });

  it("recreate removes one session's scope, one agent's, or all", async () => {
    const b = new RecordingBackend("bubblewrap");
    const { s } = sandboxes(
      { mode: "all", scope: "session" },
      { list: [{ id: "main" }, { id: "ops" }] },
      { bubblewrap: b },
    );
    const ws = tempDir();
    await s.forRun("main", "agent:main:a", ws);
    await s.forRun("main", "agent:main:b", ws);
    await s.forRun("ops", "agent:ops:a", ws);
    expect(await s.recreate({ sessionKey: "agent:main:a" })).toEqual([
      s.describeSession("main", "agent:main:a")!.scopeKey,
    ]);
    expect(await s.recreate({ agentId: "ops" })).toEqual([s.describeSession("ops", "agent:ops:a")!.scopeKey]);
    expect((await s.list()).map((e) => e.sessionKey)).toEqual(["agent:main:b"]);
    expect(await s.recreate({})).toHaveLength(1);
    expect(await s.list()).toEqual([]);
  });
});
