import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tailLog } from "./log-tail.js";

const dirs: string[] = [];
function logFile(text: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-log-tail-"));
  dirs.push(dir);
  const file = path.join(dir, "gateway.log");
  fs.writeFileSync(file, text);
  return file;
}
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const line = (level: string, msg: string) => `2026-12-05T10:00:00.000Z ${level.padEnd(5)} ${msg}`;

describe("logs.tail over the gateway log file", () => {
  it("returns the last lines, then only what was appended since the cursor, whole lines only", async () => {
    const file = logFile(`${line("INFO", "one")}\n${line("WARN", "two")}\n`);
    const first = await tailLog(file, { limit: 1 });
    expect(first.lines).toEqual([{ level: "warn", text: line("WARN", "two") }]);
    expect(first.truncated).toBe(true);
    // a line being written (no newline yet) waits for the next call
    fs.appendFileSync(file, `${line("ERROR", "three")}\n${line("INFO", "half")}`);
    const second = await tailLog(file, { cursor: first.cursor });
    expect(second.lines.map((l) => l.text)).toEqual([line("ERROR", "three")]);
    fs.appendFileSync(file, " done\n");
    const third = await tailLog(file, { cursor: second.cursor });
    expect(third.lines.map((l) => l.text)).toEqual([line("INFO", "half done")]);
    expect((await tailLog(file, { cursor: third.cursor })).lines).toEqual([]);
  });

  it("filters by the least level, keeping a stack trace's lines with the line they belong to", async () => {
    const file = logFile(
      [line("DEBUG", "noise"), line("INFO", "hello"), line("ERROR", "boom"), "    at thing (x.js:1)", ""].join("\n"),
    );
    const res = await tailLog(file, { level: "warn" });
    expect(res.lines.map((l) => l.text)).toEqual([line("ERROR", "boom"), "    at thing (x.js:1)"]);
    const json = logFile(`{"time":"t","level":"warn","msg":"careful"}\n{"time":"t","level":"info","msg":"fine"}\n`);
    expect((await tailLog(json, { level: "warn" })).lines.map((l) => l.level)).toEqual(["warn"]);
  });

  it("starts again at the beginning of a rotated (smaller) file and says so", async () => {
    const file = logFile(`${line("INFO", "old old old old")}\n`);
    const { cursor } = await tailLog(file, {});
    fs.writeFileSync(file, `${line("INFO", "new")}\n`);
    const res = await tailLog(file, { cursor });
    expect(res.reset).toBe(true);
    expect(res.lines.map((l) => l.text)).toEqual([line("INFO", "new")]);
  });

  it("answers an empty log for a gateway that writes no file", async () => {
    const res = await tailLog(path.join(os.tmpdir(), "no-such-dir-loopgate", "gateway.log"), {});
    expect(res).toMatchObject({ lines: [], cursor: 0, size: 0 });
  });
});
