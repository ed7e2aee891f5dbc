import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openGatewayLogFile } from "./gateway-log-file.js";

let tmp: string | undefined;
afterEach(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  tmp = undefined;
});

describe("the gateway's log file", () => {
  it("gateway-log-rotates-without-losing-lines: past the size cap the file becomes .1 and a new one starts", async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-logfile-"));
    const file = path.join(tmp, "logs", "gateway.log");
    const log = openGatewayLogFile(file, 100);
    expect(log).toBeDefined();
    const lines = Array.from({ length: 12 }, (_, i) => `line ${String(i).padStart(2, "0")} ${"x".repeat(20)}`);
    for (const line of lines) log!.write(line);
    await log!.close();
    const old = fs.readFileSync(`${file}.1`, "utf8");
    const current = fs.readFileSync(file, "utf8");
    process.stdout.write(`gateway.log.1: ${old.length} bytes, gateway.log: ${current.length} bytes\n`);
    expect(current.length).toBeLessThanOrEqual(100);
    // one old file is kept: the newest lines are all there, in order, across the two files
    const kept = `${old}${current}`.split("\n").filter(Boolean);
    expect(kept).toEqual(lines.slice(-kept.length));
    expect(current.split("\n").filter(Boolean).at(-1)).toBe(lines.at(-1));
    expect((fs.statSync(file).mode & 0o777).toString(8)).toBe("600");
  });
});
