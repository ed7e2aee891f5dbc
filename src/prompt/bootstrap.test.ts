import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBootstrapFiles } from "./bootstrap.js";

let ws: string;
beforeEach(async () => {
  ws = await mkdtemp(path.join(tmpdir(), "loopgate-boot-"));
});
afterEach(async () => {
  await rm(ws, { recursive: true, force: true });
});

const put = (name: string, text: string) => writeFile(path.join(ws, name), text);

/** Text whose every position is recognisable, so head/tail cuts can be checked exactly. */
function marked(head: string, middle: string, tail: string, n: number): string {
  return head.repeat(n) + middle.repeat(n) + tail.repeat(n);
}

describe("loadBootstrapFiles", () => {
  it("loads files in the fixed order, skipping missing and empty ones", async () => {
    await put("MEMORY.md", "remember this");
    await put("SOUL.md", "be kind");
    await put("AGENTS.md", "rules");
    await put("TOOLS.md", "");
    await put("USER.md", "  \n\n ");
    const files = await loadBootstrapFiles(ws);
    expect(files.map((f) => f.name)).toEqual(["AGENTS.md", "SOUL.md", "MEMORY.md"]);
    expect(files[0]).toEqual({
      name: "AGENTS.md",
      path: path.join(ws, "AGENTS.md"),
      content: "rules",
      truncated: false,
      originalChars: 5,
    });
  });

  it("returns nothing for a workspace without any of the files", async () => {
    expect(await loadBootstrapFiles(ws)).toEqual([]);
    expect(await loadBootstrapFiles(path.join(ws, "does-not-exist"))).toEqual([]);
  });

  it("cuts an oversized file to 75% head and 25% tail with a marker naming the file", async () => {
    await put("AGENTS.md", marked("H", "M", "T", 1000));
    const [file] = await loadBootstrapFiles(ws, { perFileMaxChars: 400 });
    expect(file.truncated).toBe(true);
    expect(file.originalChars).toBe(3000);
    const [head, marker, tail] = file.content.split("\n");
    expect(head).toBe("H".repeat(300));
    expect(tail).toBe("T".repeat(100));
    expect(marker).toBe("[... 2600 chars of AGENTS.md omitted; read the file with the read tool for the rest ...]");
  });

  it("applies the 20000-char per-file cap by default and keeps exactly that many chars of the file", async () => {
    await put("MEMORY.md", "a".repeat(25_000));
    const [file] = await loadBootstrapFiles(ws);
    expect(file.truncated).toBe(true);
    expect(file.content.replace(/\n\[\.\.\. .*\]\n/, "")).toBe("a".repeat(20_000));
    expect(file.content).toContain("5000 chars of MEMORY.md omitted");
  });

  it("gives later files only what is left of the total budget", async () => {
    await put("AGENTS.md", "a".repeat(600));
    await put("SOUL.md", marked("h", "m", "t", 300));
    const files = await loadBootstrapFiles(ws, { perFileMaxChars: 1000, totalMaxChars: 1000 });
    expect(files[0]).toMatchObject({ name: "AGENTS.md", truncated: false });
    expect(files[1]).toMatchObject({ name: "SOUL.md", truncated: true, originalChars: 900 });
    // 400 chars were left: 300 head + 100 tail.
    const [head, marker, tail] = files[1].content.split("\n");
    expect(head).toBe("h".repeat(300));
    expect(tail).toBe("t".repeat(100));
    expect(marker).toContain("500 chars of SOUL.md omitted");
  });

  it("lists a file as omitted when the total budget is used up, and still fits a small file after it", async () => {
    await put("AGENTS.md", "a".repeat(1000));
    await put("SOUL.md", "s".repeat(5000));
    await put("MEMORY.md", "short memory");
    const files = await loadBootstrapFiles(ws, { perFileMaxChars: 1000, totalMaxChars: 1050 });
    expect(files.map((f) => f.name)).toEqual(["AGENTS.md", "SOUL.md", "MEMORY.md"]);
    expect(files[1].omitted).toBe(true);
    expect(files[1].content).toMatch(/SOUL\.md omitted/);
    expect(files[1].content).not.toContain("sss");
    expect(files[2]).toMatchObject({ content: "short memory", truncated: false });
  });

  it("never splits an emoji when cutting", async () => {
    await put("USER.md", "😀".repeat(500));
    const [file] = await loadBootstrapFiles(ws, { perFileMaxChars: 301 });
    // A lone surrogate would show up as an unpaired code unit.
    expect(file.content).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
  });
});
