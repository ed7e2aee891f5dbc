import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import { HistoryCache } from "./history-cache.js";

const stores: SqliteStore[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function open(file: string): SqliteStore {
  const s = new SqliteStore(file);
  stores.push(s);
  return s;
}

function user(store: SqliteStore, key: string, text: string): void {
  store.appendTranscript([
    { sessionKey: key, kind: "message", createdAt: 1, message: { role: "user", content: text } },
  ]);
}

describe("session history between turns", () => {
  const file = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-hist-"));
    dirs.push(dir);
    return path.join(dir, "db.sqlite");
  };

  it("includes rows another writer (another process's store) appended since the last turn", async () => {
    const f = file();
    const a = open(f);
    const b = open(f);
    a.ensureSession("k", "main", 1);
    user(a, "k", "one");
    const cache = new HistoryCache();
    expect((await cache.load(new SqliteStoreAdapter(a), "k")).messages.map((m) => m.content)).toEqual(["one"]);
    user(b, "k", "two");
    expect((await cache.load(new SqliteStoreAdapter(a), "k")).messages.map((m) => m.content)).toEqual(["one", "two"]);
  });

  it("starts empty after /new (a new generation) and after the session was deleted and re-created", async () => {
    const s = open(file());
    s.ensureSession("k", "main", 1);
    user(s, "k", "old");
    const cache = new HistoryCache();
    expect((await cache.load(new SqliteStoreAdapter(s), "k")).messages).toHaveLength(1);
    s.resetSession("k", 2, "/new");
    expect((await cache.load(new SqliteStoreAdapter(s), "k")).messages).toEqual([]);
    user(s, "k", "a");
    user(s, "k", "b");
    expect((await cache.load(new SqliteStoreAdapter(s), "k")).messages).toHaveLength(2);
    s.deleteSession("k");
    s.ensureSession("k", "main", 3);
    user(s, "k", "fresh");
    expect((await cache.load(new SqliteStoreAdapter(s), "k")).messages.map((m) => m.content)).toEqual(["fresh"]);
  });

  it("hands out a copy, so a run appending to its history does not change the cache", async () => {
    const s = open(file());
    s.ensureSession("k", "main", 1);
    user(s, "k", "one");
    const cache = new HistoryCache();
    (await cache.load(new SqliteStoreAdapter(s), "k")).messages.push({ role: "user", content: "not stored" });
    expect((await cache.load(new SqliteStoreAdapter(s), "k")).messages).toHaveLength(1);
  });
});
