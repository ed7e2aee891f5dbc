import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteStore } from "./sqlite-store.js";

const mode = (p: string) => fs.statSync(p).mode & 0o777;

describe("the database file mode is the umask's", () => {
  let tmp: string;
  let umask: number;
  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-modes-"));
    // the usual desktop umask: without care, new files would be 0644 and new dirs 0755 (readable by everyone)
    umask = process.umask(0o022);
  });
  afterEach(() => {
    process.umask(umask);
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it("a new state dir is 0700 and the database, its -wal and -shm are 0600", () => {
    const stateDir = path.join(tmp, "state");
    const store = new SqliteStore(path.join(stateDir, "loopgate.sqlite"));
    store.ensureSession("agent:main:main", "main", 1);
    expect(mode(stateDir)).toBe(0o700);
    for (const f of ["loopgate.sqlite", "loopgate.sqlite-wal", "loopgate.sqlite-shm"]) {
      expect([f, mode(path.join(stateDir, f))]).toEqual([f, 0o600]);
    }
    store.close();
  });

  it("a store made before this rule gets its files tightened to 0600 when opened; the chosen dir is left as it is", () => {
    const file = path.join(tmp, "loopgate.sqlite");
    new SqliteStore(file).close();
    fs.chmodSync(tmp, 0o755);
    fs.chmodSync(file, 0o644);
    fs.writeFileSync(`${file}-wal`, "", { mode: 0o644 });
    fs.chmodSync(`${file}-wal`, 0o666);
    const store = new SqliteStore(file);
    expect(mode(file)).toBe(0o600);
    expect(mode(`${file}-wal`)).toBe(0o600);
    expect(mode(tmp)).toBe(0o755);
    store.close();
  });
});
