import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeSandbox, type Sandbox } from "./test-helpers.js";
import { ToolError } from "./types.js";
import { resolveInWorkspace } from "./workspace-path.js";

let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
  await writeFile(path.join(sb.outside, "secret.txt"), "top secret");
});
afterEach(() => sb.cleanup());

describe("resolveInWorkspace", () => {
  it("resolves relative and absolute paths inside the workspace", async () => {
    await expect(resolveInWorkspace(sb.ws, "a/b.txt")).resolves.toBe(path.join(sb.ws, "a/b.txt"));
    await expect(resolveInWorkspace(sb.ws, path.join(sb.ws, "c.txt"))).resolves.toBe(path.join(sb.ws, "c.txt"));
    await expect(resolveInWorkspace(sb.ws, ".")).resolves.toBe(sb.ws);
  });

  it("refuses a .. path that climbs out of the workspace, naming the path and the workspace", async () => {
    const err = await resolveInWorkspace(sb.ws, "../outside/secret.txt").catch((e) => e);
    expect(err).toBeInstanceOf(ToolError);
    expect(err.message).toBe(`path "../outside/secret.txt" is outside the workspace (${sb.ws})`);
  });

  it("allows .. that stays inside the workspace", async () => {
    await expect(resolveInWorkspace(sb.ws, "a/../b.txt")).resolves.toBe(path.join(sb.ws, "b.txt"));
  });

  it("refuses an absolute path outside the workspace", async () => {
    await expect(resolveInWorkspace(sb.ws, path.join(sb.outside, "secret.txt"))).rejects.toThrow(
      /is outside the workspace/,
    );
    await expect(resolveInWorkspace(sb.ws, "/etc/passwd")).rejects.toThrow(/outside the workspace/);
  });

  it("refuses a symlinked file that points outside", async () => {
    await symlink(path.join(sb.outside, "secret.txt"), path.join(sb.ws, "link.txt"));
    await expect(resolveInWorkspace(sb.ws, "link.txt")).rejects.toThrow(
      /goes through symlink "link.txt", which leads outside the workspace/,
    );
  });

  it("refuses a file under a symlinked directory that points outside", async () => {
    await symlink(sb.outside, path.join(sb.ws, "data"));
    await expect(resolveInWorkspace(sb.ws, "data/secret.txt")).rejects.toThrow(/symlink "data".*outside/);
  });

  it("refuses a not-yet-existing file under a symlinked directory that points outside", async () => {
    await mkdir(path.join(sb.ws, "sub"));
    await symlink(sb.outside, path.join(sb.ws, "sub/out"));
    await expect(resolveInWorkspace(sb.ws, "sub/out/new/deeper.txt", { forWrite: true })).rejects.toThrow(
      /symlink "sub\/out".*outside/,
    );
  });

  it("refuses a dangling symlink whose target would be created outside", async () => {
    await symlink(path.join(sb.outside, "not-yet.txt"), path.join(sb.ws, "dangling.txt"));
    await expect(resolveInWorkspace(sb.ws, "dangling.txt", { forWrite: true })).rejects.toThrow(/outside/);
  });

  it("follows symlinks that stay inside and returns the real target", async () => {
    await mkdir(path.join(sb.ws, "real"));
    await writeFile(path.join(sb.ws, "real/f.txt"), "x");
    await symlink("real", path.join(sb.ws, "alias"));
    await expect(resolveInWorkspace(sb.ws, "alias/f.txt")).resolves.toBe(path.join(sb.ws, "real/f.txt"));
  });

  it("accepts the workspace named through a symlink to it", async () => {
    const viaLink = path.join(sb.outside, "ws-link");
    await symlink(sb.ws, viaLink);
    await expect(resolveInWorkspace(viaLink, "f.txt")).resolves.toBe(path.join(sb.ws, "f.txt"));
    await expect(resolveInWorkspace(viaLink, path.join(viaLink, "f.txt"))).resolves.toBe(path.join(sb.ws, "f.txt"));
  });

  it("rejects an empty path and NUL bytes with a clear message", async () => {
    await expect(resolveInWorkspace(sb.ws, "")).rejects.toThrow("path is empty");
    await expect(resolveInWorkspace(sb.ws, "a\0b")).rejects.toThrow(/contains a NUL byte/);
  });

  it("refuses a symlink loop instead of hanging", async () => {
    await symlink("loop-b", path.join(sb.ws, "loop-a"));
    await symlink("loop-a", path.join(sb.ws, "loop-b"));
    await expect(resolveInWorkspace(sb.ws, "loop-a/x", { forWrite: true })).rejects.toThrow(/symlink loop/);
  });

  it("refuses to write to a directory", async () => {
    await mkdir(path.join(sb.ws, "dir"));
    await expect(resolveInWorkspace(sb.ws, "dir", { forWrite: true })).rejects.toThrow(/is a directory/);
  });
});
