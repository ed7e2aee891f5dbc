import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { SqliteStore } from "../storage/sqlite-store.js";
import type { Store } from "../storage/types.js";
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

  it("holds a bounded number of sessions and characters however many sessions a gateway serves, each history still whole", async () => {
    const s = open(file());
    const store = new SqliteStoreAdapter(s);
    const cache = new HistoryCache({ maxSessions: 20, maxChars: 2_000 });
    for (let turn = 0; turn < 3; turn++) {
      for (let i = 0; i < 200; i++) {
        const key = `s-${i}`;
        if (turn === 0) s.ensureSession(key, "main", 1);
        user(s, key, `turn ${turn} of session ${i}`);
        const loaded = await cache.load(store, key);
        expect(loaded.messages.map((m) => m.content)).toEqual(
          Array.from({ length: turn + 1 }, (_, t) => `turn ${t} of session ${i}`),
        );
        expect(cache.size.sessions).toBeLessThanOrEqual(20);
        expect(cache.size.chars).toBeLessThanOrEqual(2_000);
      }
    }
    // the bound is reached, not just never approached
    expect(cache.size.sessions).toBeGreaterThan(10);
  });

  it("lets go of a session's history once it sat idle, and reads it whole again on its next turn", async () => {
    const s = open(file());
    const store = new SqliteStoreAdapter(s);
    let now = 1_000;
    const cache = new HistoryCache({ idleMs: 60_000, clock: { now: () => now } });
    s.ensureSession("idle", "main", 1);
    s.ensureSession("busy", "main", 1);
    user(s, "idle", "one");
    await cache.load(store, "idle");
    now += 30_000;
    user(s, "busy", "b");
    await cache.load(store, "busy");
    expect(cache.size.sessions).toBe(2);
    now += 30_000;
    // "idle" was last used 60 s ago: another session's turn drops it, "busy" (30 s) stays
    await cache.load(store, "busy");
    expect(cache.size.sessions).toBe(1);
    user(s, "idle", "two");
    expect((await cache.load(store, "idle")).messages.map((m) => m.content)).toEqual(["one", "two"]);
    expect(cache.size.sessions).toBe(2);
  });

  it("keeps the character count right when a session is forgotten or reset", async () => {
    const s = open(file());
    const store = new SqliteStoreAdapter(s);
    const cache = new HistoryCache();
    s.ensureSession("k", "main", 1);
    user(s, "k", "some text");
    await cache.load(store, "k");
    user(s, "k", "more text");
    await cache.load(store, "k");
    const chars = cache.size.chars;
    expect(chars).toBeGreaterThan(0);
    s.resetSession("k", 2, "/new");
    await cache.load(store, "k");
    expect(cache.size.chars).toBe(0);
    user(s, "k", "again");
    await cache.load(store, "k");
    cache.forget("k");
    expect(cache.size).toEqual({ sessions: 0, chars: 0 });
  });

  /**
   * The SQLite store with `readSessionDelta` (the one-read form a remote store offers), counting the reads a load
   * makes: the session and the rows after a seq, read as getSession and readTranscript do.
   */
  function withSessionDelta(s: SqliteStore, reads: string[]): Store {
    const base = new SqliteStoreAdapter(s);
    return Object.assign(Object.create(base) as Store, {
      getSession: (key: string) => {
        reads.push("getSession");
        return base.getSession(key);
      },
      readTranscript: (key: string, opts?: Parameters<Store["readTranscript"]>[1]) => {
        reads.push("readTranscript");
        return base.readTranscript(key, opts);
      },
      readSessionDelta: async (key: string, afterSeq: number) => {
        reads.push("readSessionDelta");
        const session = await base.getSession(key);
        const rows = session
          ? await base.readTranscript(key, { generation: session.generation, afterSeq, imageData: true })
          : [];
        return { ...(session ? { session } : {}), rows };
      },
    });
  }

  it("a cached session's turn reads its session and new rows in one read where the store offers it, and still starts over after /new, a re-created session or a forget", async () => {
    const f = file();
    const s = open(f);
    const other = open(f);
    const reads: string[] = [];
    const store = withSessionDelta(s, reads);
    const cache = new HistoryCache();
    s.ensureSession("k", "main", 1);
    user(s, "k", "one");
    const contents = async () => (await cache.load(store, "k")).messages.map((m) => m.content);
    // first load: nothing cached, the session row first (the whole history is read after it)
    expect(await contents()).toEqual(["one"]);
    expect(reads.splice(0)).toEqual(["getSession"]);
    user(other, "k", "two");
    const loaded = await cache.load(store, "k");
    expect(loaded.messages.map((m) => m.content)).toEqual(["one", "two"]);
    expect(loaded.session?.key).toBe("k");
    expect(reads.splice(0)).toEqual(["readSessionDelta"]);
    s.resetSession("k", 2, "/new");
    user(s, "k", "after new");
    expect(await contents()).toEqual(["after new"]);
    expect(reads.splice(0)).toEqual(["readSessionDelta"]);
    s.deleteSession("k");
    s.ensureSession("k", "main", 3);
    user(s, "k", "fresh");
    expect(await contents()).toEqual(["fresh"]);
    user(s, "k", "fresh two");
    expect(await contents()).toEqual(["fresh", "fresh two"]);
    cache.forget("k");
    expect(await contents()).toEqual(["fresh", "fresh two"]);
    expect(reads.splice(0)).toEqual(["readSessionDelta", "readSessionDelta", "getSession"]);
  });
});
