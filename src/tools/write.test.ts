import { chmod, link, readdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeSandbox, type Sandbox } from "./test-helpers.js";
import { checkToolArgs } from "./validate.js";
import { createWriteTool } from "./write.js";

const write = createWriteTool();
let sb: Sandbox;
beforeEach(async () => {
  sb = await makeSandbox();
});
afterEach(() => sb.cleanup());

describe("write", () => {
  it("creates missing parent directories and reports the bytes written", async () => {
    const out = await write.execute({ path: "a/b/c.txt", content: "héllo" }, sb.ctx());
    expect(await readFile(path.join(sb.ws, "a/b/c.txt"), "utf8")).toBe("héllo");
    expect(out.content).toBe("created a/b/c.txt (6 bytes written)");
  });

  it("replaces the file with a new one instead of rewriting it in place, leaving no temp files", async () => {
    const file = path.join(sb.ws, "f.txt");
    await writeFile(file, "old");
    // A hard link made before the write still sees the old bytes only if the write swapped in a new file.
    await link(file, path.join(sb.ws, "f.old"));
    const out = await write.execute({ path: "f.txt", content: "new" }, sb.ctx());
    expect(out.content).toBe("overwrote f.txt (3 bytes written)");
    expect(await readFile(file, "utf8")).toBe("new");
    expect(await readFile(path.join(sb.ws, "f.old"), "utf8")).toBe("old");
    expect((await readdir(sb.ws)).sort()).toEqual(["f.old", "f.txt"]);
  });

  it("keeps an existing file's permissions", async () => {
    const file = path.join(sb.ws, "run.sh");
    await writeFile(file, "#!/bin/sh\n");
    await chmod(file, 0o755);
    await write.execute({ path: "run.sh", content: "#!/bin/sh\necho hi\n" }, sb.ctx());
    expect((await stat(file)).mode & 0o777).toBe(0o755);
  });

  it("writes through an inside symlink to its target and keeps the link", async () => {
    await writeFile(path.join(sb.ws, "target.txt"), "old");
    await symlink("target.txt", path.join(sb.ws, "alias.txt"));
    await write.execute({ path: "alias.txt", content: "new" }, sb.ctx());
    expect(await readFile(path.join(sb.ws, "target.txt"), "utf8")).toBe("new");
    expect((await readdir(sb.ws)).sort()).toEqual(["alias.txt", "target.txt"]);
  });

  it("refuses to create a file under a symlinked directory that leads outside", async () => {
    await symlink(sb.outside, path.join(sb.ws, "out"));
    await expect(write.execute({ path: "out/new/x.txt", content: "x" }, sb.ctx())).rejects.toThrow(/outside/);
    expect(await readdir(sb.outside)).toEqual([]);
  });

  it("names a missing content field", async () => {
    expect(await checkToolArgs(write, { path: "x.txt" })).toEqual({
      ok: false,
      error: "invalid arguments for write: content: is required",
    });
  });
});
