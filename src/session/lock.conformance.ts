import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SessionLockHandle, SessionLockPort } from "./lock-port.js";

/**
 * The SessionLockPort conformance cases (Hono's common.case pattern), run by one `*.test.ts` per implementation.
 * `locks` is one owner (a process, a node). `peer` is a second owner on the same backend, when the runner can make
 * one inside this test process (two pools on one Postgres can; the file lock's owner is the process, so its runner
 * leaves `peer` out and its cross-process cases live in write-lock.test.ts with real child processes). Without a
 * peer the two-owner cases are skipped.
 */
export interface LocksUnderTest {
  locks: SessionLockPort;
  peer?: SessionLockPort;
  close(): Promise<void>;
}

export function sessionLockConformance(
  name: string,
  open: () => Promise<LocksUnderTest>,
  opts: { hasPeer: boolean },
): void {
  const { hasPeer } = opts;
  describe(`SessionLockPort conformance: ${name}`, () => {
    let t: LocksUnderTest;
    const held: SessionLockHandle[] = [];
    beforeEach(async () => {
      t = await open();
    });
    afterEach(async () => {
      for (const h of held.splice(0)) await h.release();
      await t.close();
    });
    const take = async (port: SessionLockPort, key: string, timeoutMs?: number) => {
      const h = await port.acquire(key, timeoutMs !== undefined ? { acquireTimeoutMs: timeoutMs } : {});
      held.push(h);
      return h;
    };

    it("a session its owner already holds is refused at once to that owner (a nested acquire would wait for itself)", async () => {
      await take(t.locks, "agent:main:one");
      await expect(t.locks.acquire("agent:main:one", { acquireTimeoutMs: 60_000 })).rejects.toThrow();
    });

    it("holding one session never delays another of the same owner", async () => {
      await take(t.locks, "agent:main:one");
      const b = await take(t.locks, "agent:main:two", 0);
      expect(b.sessionKey).toBe("agent:main:two");
    });

    it("a released session can be taken again, with a larger fencing token", async () => {
      const tokens: number[] = [];
      for (let i = 0; i < 5; i++) {
        const h = await t.locks.acquire("agent:main:one", { acquireTimeoutMs: 0 });
        tokens.push(h.fencingToken);
        await h.release();
      }
      expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
      expect(new Set(tokens).size).toBe(5);
    });

    it("a second release of an old handle does not free the session's new holder", async () => {
      const a = await t.locks.acquire("agent:main:one");
      await a.release();
      await take(t.locks, "agent:main:one", 0);
      await a.release();
      await expect(t.locks.acquire("agent:main:one", { acquireTimeoutMs: 0 })).rejects.toThrow();
    });

    it("back-to-back holds of one session by its owner each keep it exclusive, and it is free once idle", async () => {
      const first = await t.locks.acquire("agent:main:one", { acquireTimeoutMs: 0 });
      await first.release();
      const second = await take(t.locks, "agent:main:one", 0);
      await expect(t.locks.acquire("agent:main:one", { acquireTimeoutMs: 0 })).rejects.toThrow();
      // the earlier turn's handle frees nothing of the later one's
      await first.release();
      await expect(t.locks.acquire("agent:main:one", { acquireTimeoutMs: 0 })).rejects.toThrow();
      await second.release();
      const third = await take(t.locks, "agent:main:one", 0);
      expect(third.fencingToken).toBeGreaterThan(second.fencingToken);
    });

    // Skipped for a backend with no second owner in this process (the file lock: its other owner is another process,
    // and write-lock.test.ts covers these cases with real child processes).
    const twoOwners = (title: string, fn: (peer: SessionLockPort) => Promise<void>) =>
      it.skipIf(!hasPeer)(title, () => fn(t.peer!));

    twoOwners("a session held by one owner is refused to the other while the wait allows none", async (peer) => {
      const a = await take(t.locks, "agent:main:one");
      expect(a.sessionKey).toBe("agent:main:one");
      let waitedFor: { holderPid?: number } | undefined;
      await expect(
        peer.acquire("agent:main:one", { acquireTimeoutMs: 0, onWait: (info) => (waitedFor = info) }),
      ).rejects.toThrow(/busy/i);
      expect(waitedFor).toBeDefined();
    });

    twoOwners("holding one session never delays another owner's", async (peer) => {
      await take(t.locks, "agent:main:one");
      const b = await take(peer, "agent:main:two", 0);
      expect(b.sessionKey).toBe("agent:main:two");
    });

    twoOwners("a waiter gets the session once the holder releases it, with a larger fencing token", async (peer) => {
      const a = await t.locks.acquire("agent:main:one");
      const waiting = peer.acquire("agent:main:one", { acquireTimeoutMs: 60_000 });
      let got = false;
      void waiting.then(() => (got = true));
      await Promise.resolve();
      expect(got).toBe(false);
      await a.release();
      const b = await waiting;
      held.push(b);
      expect(b.fencingToken).toBeGreaterThan(a.fencingToken);
    });

    twoOwners(
      "a peer waiting through the owner's back-to-back holds gets the session once the owner is idle",
      async (peer) => {
        const a = await t.locks.acquire("agent:main:one");
        const waiting = peer.acquire("agent:main:one", { acquireTimeoutMs: 60_000 });
        await a.release();
        // the owner's next turn, if the peer has not got in first
        const b = await t.locks.acquire("agent:main:one", { acquireTimeoutMs: 0 }).catch(() => undefined);
        await b?.release();
        const c = await waiting;
        held.push(c);
        expect(c.sessionKey).toBe("agent:main:one");
      },
    );

    twoOwners("release is idempotent: a second release does not free the session for a third owner", async (peer) => {
      const a = await t.locks.acquire("agent:main:one");
      await a.release();
      const b = await take(peer, "agent:main:one", 0);
      await a.release();
      await expect(t.locks.acquire("agent:main:one", { acquireTimeoutMs: 0 })).rejects.toThrow(/busy/i);
      expect(b.fencingToken).toBeGreaterThan(a.fencingToken);
    });

    twoOwners("an aborted wait rejects with the signal's reason and leaves the session to its holder", async (peer) => {
      await take(t.locks, "agent:main:one");
      const ac = new AbortController();
      const waiting = peer.acquire("agent:main:one", { acquireTimeoutMs: 60_000, signal: ac.signal });
      ac.abort(new Error("client went away"));
      await expect(waiting).rejects.toThrow("client went away");
      await expect(peer.acquire("agent:main:one", { acquireTimeoutMs: 0 })).rejects.toThrow(/busy/i);
    });

    twoOwners("many owners racing for one session each get it alone, one after another", async (peer) => {
      let inside = 0;
      let most = 0;
      const turn = async (port: SessionLockPort) => {
        const h = await port.acquire("agent:main:race", { acquireTimeoutMs: 60_000 });
        inside++;
        most = Math.max(most, inside);
        await new Promise<void>((resolve) => setImmediate(resolve));
        inside--;
        await h.release();
        return h.fencingToken;
      };
      const tokens = await Promise.all([t.locks, peer, t.locks, peer].map(turn));
      expect(most).toBe(1);
      expect(new Set(tokens).size).toBe(4);
    });
  });
}
