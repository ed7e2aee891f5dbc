import { mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ensureWorkspace, resolveWorkspaceDir, STARTER_FILES } from "./workspace.js";

describe("resolveWorkspaceDir", () => {
  const base = { stateDir: "/state", homeDir: "/home/ada" };

  it("uses the agent's own workspace over the defaults", () => {
    expect(
      resolveWorkspaceDir({ ...base, agentId: "main", agentWorkspace: "/mine", defaultWorkspace: "/shared" }),
    ).toBe("/mine");
  });

  it("uses the default workspace when the main agent has none of its own", () => {
    expect(resolveWorkspaceDir({ ...base, agentId: "main", defaultWorkspace: "/shared" })).toBe("/shared");
  });

  it("falls back to <stateDir>/workspace for the main agent", () => {
    expect(resolveWorkspaceDir({ ...base, agentId: "main" })).toBe("/state/workspace");
  });

  it("expands ~ to the home directory in every configured path", () => {
    expect(resolveWorkspaceDir({ ...base, agentId: "main", agentWorkspace: "~/agent" })).toBe("/home/ada/agent");
    expect(resolveWorkspaceDir({ ...base, agentId: "main", defaultWorkspace: "~" })).toBe("/home/ada");
    expect(resolveWorkspaceDir({ agentId: "main", stateDir: "~/.loopgate", homeDir: "/home/ada" })).toBe(
      "/home/ada/.loopgate/workspace",
    );
  });

  it("gives a second agent without its own workspace a separate directory, not the shared default", () => {
    expect(resolveWorkspaceDir({ ...base, agentId: "work", defaultWorkspace: "/shared" })).toBe(
      "/state/workspace-work",
    );
  });

  it("lets a second agent use its own configured workspace", () => {
    expect(resolveWorkspaceDir({ ...base, agentId: "work", agentWorkspace: "~/work" })).toBe("/home/ada/work");
  });

  it("redirects sandboxed runs into <sandboxRoot>/<agentId>, ignoring the host workspace", () => {
    expect(resolveWorkspaceDir({ ...base, agentId: "main", agentWorkspace: "/mine", sandboxRoot: "~/sandboxes" })).toBe(
      "/home/ada/sandboxes/main",
    );
    expect(resolveWorkspaceDir({ ...base, agentId: "work", sandboxRoot: "/sb" })).toBe("/sb/work");
  });

  it("refuses an agent id that could escape the state directory, naming it", () => {
    expect(() => resolveWorkspaceDir({ ...base, agentId: "../evil" })).toThrow(/invalid agent id "\.\.\/evil"/);
    expect(() => resolveWorkspaceDir({ ...base, agentId: "" })).toThrow(/invalid agent id/);
  });
});

describe("ensureWorkspace", () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(path.join(tmpdir(), "loopgate-ws-"));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("creates a brand-new workspace with the starter files, BOOTSTRAP.md included", async () => {
    const dir = path.join(root, "nested", "workspace");
    const result = await ensureWorkspace(dir);
    expect(result.created).toBe(true);
    expect((await readdir(result.dir)).sort()).toEqual(Object.keys(STARTER_FILES).sort());
    expect(await readFile(path.join(dir, "BOOTSTRAP.md"), "utf8")).toMatch(/first run/i);
    expect(await readFile(path.join(dir, "BOOTSTRAP.md"), "utf8")).toMatch(/delete this file/i);
  });

  it("does not bring BOOTSTRAP.md back once the agent deleted it", async () => {
    const dir = path.join(root, "ws");
    await ensureWorkspace(dir);
    await unlink(path.join(dir, "BOOTSTRAP.md"));
    const again = await ensureWorkspace(dir);
    expect(again.created).toBe(false);
    expect(await readdir(dir)).not.toContain("BOOTSTRAP.md");
  });

  it("never writes starter files into an existing workspace, and never overwrites the user's files", async () => {
    const dir = path.join(root, "existing");
    await mkdir(dir);
    await writeFile(path.join(dir, "AGENTS.md"), "my own rules\n");
    const result = await ensureWorkspace(dir);
    expect(result.created).toBe(false);
    expect(await readdir(dir)).toEqual(["AGENTS.md"]);
    expect(await readFile(path.join(dir, "AGENTS.md"), "utf8")).toBe("my own rules\n");
  });

  it("treats an empty pre-created directory as brand-new", async () => {
    const dir = path.join(root, "empty");
    await mkdir(dir);
    expect((await ensureWorkspace(dir)).created).toBe(true);
    expect(await readdir(dir)).toContain("BOOTSTRAP.md");
  });

  it("returns the real path when the workspace is reached through a symlink", async () => {
    const real = path.join(root, "real");
    await mkdir(real);
    await writeFile(path.join(real, "notes.txt"), "x");
    const link = path.join(root, "link");
    await symlink(real, link);
    const result = await ensureWorkspace(link);
    expect(result.dir).toBe(await realpath(real));
  });
});
