import fs from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BootstrapCache } from "./bootstrap-cache.js";
import { skillsFingerprint } from "./skills.js";

// Real directories and real fs.watch: what a user editing their workspace between two turns does.
let ws: string;
let cache: BootstrapCache;
beforeEach(() => {
  ws = fs.mkdtempSync(path.join(tmpdir(), "loopgate-boot-cache-"));
  cache = new BootstrapCache();
});
afterEach(() => {
  vi.restoreAllMocks();
  cache.clear();
  fs.rmSync(ws, { recursive: true, force: true });
});

const agents = async () => (await cache.load(ws)).find((f) => f.name === "AGENTS.md")?.content;
const skill = (dir: string, name: string, text: string) => {
  fs.mkdirSync(path.join(dir, name), { recursive: true });
  fs.writeFileSync(path.join(dir, name, "SKILL.md"), text);
};

describe("bootstrap files between turns", () => {
  it("an edit of AGENTS.md is in the next turn's files, even at the same size", async () => {
    fs.writeFileSync(path.join(ws, "AGENTS.md"), "rule one");
    expect(await agents()).toBe("rule one");
    fs.writeFileSync(path.join(ws, "AGENTS.md"), "rule two");
    expect(await agents()).toBe("rule two");
  });

  it("a bootstrap file created after the first turn is in the next one", async () => {
    expect(await agents()).toBeUndefined();
    fs.writeFileSync(path.join(ws, "AGENTS.md"), "new rules");
    expect(await agents()).toBe("new rules");
  });

  it("a turn where nothing changed looks at no file", async () => {
    fs.writeFileSync(path.join(ws, "AGENTS.md"), "rules");
    await cache.load(ws);
    const lstat = vi.spyOn(fs, "lstatSync");
    const stat = vi.spyOn(fs, "statSync");
    expect(await agents()).toBe("rules");
    expect(await agents()).toBe("rules");
    expect(lstat).not.toHaveBeenCalled();
    expect(stat).not.toHaveBeenCalled();
  });

  it("a symlinked AGENTS.md whose target is edited elsewhere is still seen by the next turn", async () => {
    const elsewhere = fs.mkdtempSync(path.join(tmpdir(), "loopgate-boot-target-"));
    try {
      fs.writeFileSync(path.join(elsewhere, "rules.md"), "linked one");
      fs.symlinkSync(path.join(elsewhere, "rules.md"), path.join(ws, "AGENTS.md"));
      expect(await agents()).toBe("linked one");
      fs.writeFileSync(path.join(elsewhere, "rules.md"), "linked two, longer");
      expect(await agents()).toBe("linked two, longer");
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it("the hook's edits to the list a turn got do not leak into the next turn", async () => {
    fs.writeFileSync(path.join(ws, "AGENTS.md"), "rules");
    const first = await cache.load(ws);
    first[0].content = "changed by a hook";
    expect(await agents()).toBe("rules");
  });
});

describe("skills folders between turns", () => {
  it("a skill added, a SKILL.md edited in place and a skill removed each change the next turn's fingerprint", async () => {
    const dir = path.join(ws, "skills");
    skill(dir, "notes", "---\nname: notes\ndescription: one\n---\n");
    const seen = [await cache.skillsFingerprint([dir])];
    expect(seen[0]).toBe(await skillsFingerprint([dir]));

    skill(dir, "todo", "---\nname: todo\ndescription: two\n---\n");
    seen.push(await cache.skillsFingerprint([dir]));
    fs.writeFileSync(path.join(dir, "notes", "SKILL.md"), "---\nname: notes\ndescription: 1ne\n---\n");
    seen.push(await cache.skillsFingerprint([dir]));
    fs.rmSync(path.join(dir, "todo"), { recursive: true });
    seen.push(await cache.skillsFingerprint([dir]));

    expect(new Set(seen).size).toBe(4);
    expect(seen[3]).toBe(await skillsFingerprint([dir]));
  });

  it("a skills folder that did not exist at the first turn is seen once it is made", async () => {
    const dir = path.join(ws, "skills");
    const before = await cache.skillsFingerprint([dir]);
    skill(dir, "notes", "---\nname: notes\ndescription: one\n---\n");
    const after = await cache.skillsFingerprint([dir]);
    expect(after).not.toBe(before);
    expect(after).toBe(await skillsFingerprint([dir]));
  });

  it("a turn where no skill changed lists no folder", async () => {
    const dir = path.join(ws, "skills");
    skill(dir, "notes", "---\nname: notes\ndescription: one\n---\n");
    const first = await cache.skillsFingerprint([dir]);
    const readdir = vi.spyOn(fs, "readdirSync");
    expect(await cache.skillsFingerprint([dir])).toBe(first);
    expect(readdir).not.toHaveBeenCalled();
  });
});
