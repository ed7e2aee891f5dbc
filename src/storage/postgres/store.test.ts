import { createHash } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ChatMessage } from "../../providers/types.js";
import { ManualClock } from "../../testing/manual-clock.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../testing/postgres-schema.js";
import { type NotifyPointer, sessionChannel } from "./notifier.js";
import { FencedError, SessionLeases } from "./session-leases.js";
import { openPostgresStore, type PostgresStore } from "./store.js";

// What the conformance cases (store.conformance.ts) do not cover: image blobs in Postgres, the fencing hook for
// several nodes, the shared LISTEN connection and the run-event pointers. Skipped without LOOPGATE_TEST_POSTGRES_URL:
// these need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("PostgresStore", () => {
  let ts: TestSchema;
  const open: PostgresStore[] = [];
  let keyNo = 0;
  let key: string;

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
  });
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });
  afterAll(async () => {
    await ts?.drop();
  });

  async function store(): Promise<PostgresStore> {
    const s = await openPostgresStore({ ...ts.options, poolMax: 3 });
    open.push(s);
    return s;
  }

  /** Every statement the store's connections send from now on (transaction statements too), trimmed. */
  function recordStatements(s: PostgresStore): string[] {
    const sent: string[] = [];
    s.pool.on("connect", (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: typeof query }).query = (...args) => {
        const [q] = args;
        sent.push((typeof q === "string" ? q : String((q as { text?: string }).text)).trim());
        return query(...args);
      };
    });
    return sent;
  }

  const nextKey = () => {
    key = `agent:main:s${++keyNo}`;
    return key;
  };
  const text = (sessionKey: string, t: string) => ({
    sessionKey,
    kind: "message" as const,
    createdAt: 1,
    message: { role: "user", content: t } as ChatMessage,
  });

  describe("image blobs", () => {
    const bytes = Buffer.from("\x89PNG\r\n\x1a\n pretend image bytes", "latin1");
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    const withImage = (t: string): ChatMessage => ({
      role: "toolResult",
      toolCallId: "c1",
      toolName: "read",
      isError: false,
      content: [
        { type: "text", text: t },
        { type: "image", mimeType: "image/png", data: bytes.toString("base64"), width: 3, height: 2 },
      ],
    });
    const reference = {
      type: "image",
      mimeType: "image/png",
      blob: sha256,
      bytes: bytes.byteLength,
      width: 3,
      height: 2,
    };

    it("an image is stored once per session as a BYTEA blob; the row's JSON keeps only the reference", async () => {
      const s = await store();
      nextKey();
      await s.ensureSession(key, "main", 1);
      await s.appendTranscript([
        { sessionKey: key, kind: "message", createdAt: 1, message: withImage("first") },
        { sessionKey: key, kind: "message", createdAt: 2, message: withImage("same picture again") },
      ]);
      const blobs = await s.pool.query("SELECT sha256, mime_type, bytes, data FROM blobs WHERE session_key = $1", [
        key,
      ]);
      expect(blobs.rows).toEqual([{ sha256, mime_type: "image/png", bytes: bytes.byteLength, data: bytes }]);
      const rows = await s.pool.query<{ data: string }>(
        "SELECT data FROM transcript WHERE session_key = $1 ORDER BY seq",
        [key],
      );
      expect(JSON.parse(rows.rows[0].data).message.content[1]).toEqual(reference);
      for (const r of rows.rows) expect(r.data).not.toContain(bytes.toString("base64"));
    });

    it("clients read the image reference; the model's history gets the bytes back; deleting the session drops its blobs", async () => {
      const s = await store();
      nextKey();
      await s.ensureSession(key, "main", 1);
      await s.appendTranscript([{ sessionKey: key, kind: "message", createdAt: 1, message: withImage("look") }]);
      const [listed] = await s.readTranscript(key);
      expect(listed.message?.role === "toolResult" && listed.message.content[1]).toEqual(reference);
      const [context] = await s.readContextRows(key);
      expect(context.message?.role === "toolResult" && context.message.content[1]).toEqual({
        ...reference,
        data: bytes.toString("base64"),
      });
      expect(await s.deleteSession(key)).toBe(true);
      const left = await s.pool.query("SELECT count(*)::int AS n FROM blobs WHERE session_key = $1", [key]);
      expect(left.rows[0].n).toBe(0);
    });
  });

  describe("a turn's history delta (issue 33)", () => {
    it("the session and its current generation's rows after a seq come in one statement, images with their bytes", async () => {
      const s = await store();
      nextKey();
      expect(await s.readSessionDelta(key, 0)).toEqual({ rows: [] });
      await s.ensureSession(key, "main", 1);
      await s.appendTranscript([text(key, "old one"), text(key, "old two")]);
      await s.resetSession(key, 2, "/new");
      await s.appendTranscript([text(key, "new one"), text(key, "new two"), text(key, "new three")]);
      const reader = await store();
      const sent = recordStatements(reader);
      const delta = await reader.readSessionDelta(key, 1);
      expect(sent).toHaveLength(1);
      expect(delta.session).toEqual(await s.getSession(key));
      expect(delta.session?.generation).toBe(2);
      expect(delta.rows).toEqual(await s.readTranscript(key, { afterSeq: 1 }));
      expect(delta.rows.map((r) => r.message?.content)).toEqual(["new two", "new three"]);
      // nothing new: the session alone
      expect(await reader.readSessionDelta(key, 3)).toEqual({ session: delta.session, rows: [] });
      const bytes = Buffer.from("pretend png", "latin1").toString("base64");
      const image: ChatMessage = {
        role: "toolResult",
        toolCallId: "c1",
        toolName: "read",
        isError: false,
        content: [{ type: "image", mimeType: "image/png", data: bytes, width: 1, height: 1 }],
      };
      await s.appendTranscript([{ sessionKey: key, kind: "message", createdAt: 3, message: image }]);
      const [withImage] = (await reader.readSessionDelta(key, 3)).rows;
      expect(withImage.message?.role === "toolResult" && withImage.message.content[0]).toMatchObject({ data: bytes });
    });
  });

  describe("refusals write nothing", () => {
    it("appending to an unknown session names it, and the known session's rows in the same batch are not written", async () => {
      const s = await store();
      const known = nextKey();
      await s.ensureSession(known, "main", 1);
      await expect(s.appendTranscript([text(known, "kept out"), text("agent:main:nobody", "x")])).rejects.toThrow(
        "appendTranscript: unknown session agent:main:nobody",
      );
      expect(await s.readTranscript(known)).toEqual([]);
    });

    it("a compaction whose firstKeptSeq is past the last row is refused with the valid range, and not counted", async () => {
      const s = await store();
      nextKey();
      await s.ensureSession(key, "main", 1);
      await s.appendTranscript([text(key, "a"), text(key, "b")]);
      await expect(s.appendCompaction(key, { summary: "x", firstKeptSeq: 5, createdAt: 1 })).rejects.toThrow(
        "must be a row seq from 1 to 3 (the last row is 2)",
      );
      await expect(
        s.appendCompaction("agent:main:nobody", { summary: "x", firstKeptSeq: 1, createdAt: 1 }),
      ).rejects.toThrow("unknown session");
      expect((await s.getSession(key))?.compactionCount).toBe(0);
      expect((await s.readTranscript(key)).map((r) => r.kind)).toEqual(["message", "message"]);
    });
  });

  describe("fencing (several nodes)", () => {
    it("a node fenced with an old lease token after another node took the session writes nothing and gets FencedError", async () => {
      const clock = new ManualClock();
      const nodeA = await store();
      const nodeB = await store();
      const leasesA = new SessionLeases(nodeA.pool, { nodeId: "a", leaseMs: 15_000, clock });
      const leasesB = new SessionLeases(nodeB.pool, { nodeId: "b", leaseMs: 15_000, clock });
      nextKey();
      await nodeA.acceptInput(
        { key, agentId: "main", now: 1 },
        {
          runId: `${key}-run`,
          sessionKey: key,
          status: "queued",
          acceptedAt: 1,
          params: {},
        },
      );
      const leaseA = await leasesA.acquire(key);
      const tokensA = new Map([[key, leaseA?.token as number]]);
      nodeA.setFence((k) => tokensA.get(k));
      await nodeA.appendTranscript([text(key, "while A holds the lease")]);
      await nodeA.updateRun(`${key}-run`, { status: "running", startedAt: 2 });

      // A stops heartbeating; its lease runs out and B takes the session with a larger token
      clock.advance(20_000);
      const leaseB = await leasesB.acquire(key);
      expect(leaseB?.token).toBeGreaterThan(leaseA?.token as number);

      await expect(nodeA.appendTranscript([text(key, "zombie write")])).rejects.toBeInstanceOf(FencedError);
      await expect(nodeA.updateSession(key, { totalTokens: 99 })).rejects.toBeInstanceOf(FencedError);
      await expect(nodeA.appendCompaction(key, { summary: "s", firstKeptSeq: 1, createdAt: 3 })).rejects.toBeInstanceOf(
        FencedError,
      );
      await expect(nodeA.resetSession(key, 3, "zombie reset")).rejects.toBeInstanceOf(FencedError);
      await expect(nodeA.updateRuns([{ runId: `${key}-run`, patch: { status: "ok" } }])).rejects.toBeInstanceOf(
        FencedError,
      );

      const rows = await nodeB.readTranscript(key);
      expect(rows.map((r) => r.message?.content)).toEqual(["while A holds the lease"]);
      expect(await nodeB.getSession(key)).toMatchObject({ totalTokens: 0, compactionCount: 0, generation: 1 });
      expect((await nodeB.getRun(`${key}-run`))?.status).toBe("running");

      // the new owner, fenced with its own token, writes on
      nodeB.setFence((k) => (k === key ? leaseB?.token : undefined));
      const [appended] = await nodeB.appendTranscript([text(key, "B's turn")]);
      expect(appended.seq).toBe(2);
      // a session the fence gives no token for is written unfenced
      const other = `${key}-other`;
      await nodeA.ensureSession(other, "main", 1);
      expect((await nodeA.appendTranscript([text(other, "free")]))[0].seq).toBe(1);
    });
  });

  describe("fenced writes in one statement (issue 33)", () => {
    /**
     * A store of its own for the write under test, fenced with `token`, that records every statement its connections
     * send (the transaction statements too); it knows the run's session already, as the node running it does.
     */
    async function recordingWriter(token: number, runId: string): Promise<{ writer: PostgresStore; sent: string[] }> {
      const writer = await store();
      const sent = recordStatements(writer);
      writer.setFence((k) => (k === key ? token : undefined));
      await writer.getRun(runId);
      sent.length = 0;
      return { writer, sent };
    }

    /** Node A wrote session `key` (a queued run, a message) under a lease that node B then took over. */
    async function takenOver(): Promise<{
      nodeA: PostgresStore;
      nodeB: PostgresStore;
      runId: string;
      tokens: { a: number; b: number };
    }> {
      const clock = new ManualClock();
      const nodeA = await store();
      const nodeB = await store();
      nextKey();
      const runId = `${key}-run`;
      await nodeA.acceptInput(
        { key, agentId: "main", now: 1 },
        { runId, sessionKey: key, status: "queued", acceptedAt: 1, params: {} },
      );
      const leaseA = await new SessionLeases(nodeA.pool, { nodeId: "a", leaseMs: 1000, clock }).acquire(key);
      nodeA.setFence((k) => (k === key ? leaseA?.token : undefined));
      await nodeA.appendTranscript([text(key, "while A holds the lease")]);
      clock.advance(2000);
      const leaseB = await new SessionLeases(nodeB.pool, { nodeId: "b", leaseMs: 1000, clock }).acquire(key);
      if (!leaseB) throw new Error("node B should take the expired lease");
      nodeB.setFence((k) => (k === key ? leaseB.token : undefined));
      return { nodeA, nodeB, runId, tokens: { a: leaseA?.token as number, b: leaseB.token } };
    }

    const everything = async (s: PostgresStore, runId: string) => ({
      session: await s.getSession(key),
      transcript: await s.readTranscript(key),
      run: await s.getRun(runId),
    });

    const writes: Array<[string, (s: PostgresStore, runId: string) => Promise<unknown>]> = [
      ["a transcript append", (s) => s.appendTranscript([text(key, "late")])],
      ["a session update", (s) => s.updateSession(key, { totalTokens: 99 })],
      ["a compaction", (s) => s.appendCompaction(key, { summary: "s", firstKeptSeq: 1, createdAt: 3 })],
      ["a reset", (s) => s.resetSession(key, 3, "late reset")],
      [
        "a run update with the session's usage",
        (s, runId) =>
          s.updateRuns([{ runId, patch: { status: "running", startedAt: 3 } }], {
            sessionKey: key,
            input: 1,
            output: 2,
            total: 3,
            updatedAt: 3,
          }),
      ],
      [
        "a turn's answer with its end",
        (s, runId) =>
          s.appendTranscriptAndEnd([text(key, "late answer")], {
            patches: [{ runId, patch: { status: "ok", endedAt: 3 } }],
            usage: { sessionKey: key, input: 1, output: 2, total: 3, updatedAt: 3 },
          }),
      ],
    ];

    it.each(writes)("%s with a stale lease token writes nothing and throws FencedError", async (_, write) => {
      const { nodeB, runId, tokens } = await takenOver();
      const before = await everything(nodeB, runId);
      const { writer, sent } = await recordingWriter(tokens.a, runId);
      const error = await write(writer, runId).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(FencedError);
      expect(error).toMatchObject({ sessionKey: key, token: tokens.a });
      expect(await everything(nodeB, runId)).toEqual(before);
      // the write, then the read that names the stale token: no transaction around them
      expect(sent).toHaveLength(2);
      expect(sent.filter((t) => /^(BEGIN|COMMIT)/i.test(t))).toEqual([]);
    });

    it.each(writes)("%s with the current lease token is one statement, no transaction around it", async (_, write) => {
      const { nodeB, runId, tokens } = await takenOver();
      const before = await everything(nodeB, runId);
      const { writer, sent } = await recordingWriter(tokens.b, runId);
      await write(writer, runId);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(/^WITH fence AS MATERIALIZED/);
      expect(await everything(nodeB, runId)).not.toEqual(before);
    });

    it("an append over two sessions with one stale token writes neither session's rows", async () => {
      const { nodeA, nodeB } = await takenOver();
      const stale = key;
      const other = `${key}-other`;
      await nodeA.ensureSession(other, "main", 1);
      const lease = await new SessionLeases(nodeA.pool, { nodeId: "a", leaseMs: 60_000 }).acquire(other);
      nodeA.setFence((k) => (k === other ? lease?.token : k === stale ? 1 : undefined));
      await expect(nodeA.appendTranscript([text(other, "fine"), text(stale, "late")])).rejects.toMatchObject({
        name: "FencedError",
        sessionKey: stale,
      });
      expect(await nodeB.readTranscript(other)).toEqual([]);
      expect((await nodeB.readTranscript(stale)).map((r) => r.message?.content)).toEqual(["while A holds the lease"]);
    });

    it("a takeover committing while the old owner's write runs makes that write wait, then match nothing", async () => {
      const clock = new ManualClock();
      const nodeA = await store();
      const nodeB = await store();
      nextKey();
      await nodeA.ensureSession(key, "main", 1);
      const leaseA = await new SessionLeases(nodeA.pool, { nodeId: "a", leaseMs: 1000, clock }).acquire(key);
      nodeA.setFence((k) => (k === key ? leaseA?.token : undefined));
      // node B's takeover, held open: it has replaced the lease row but not committed
      const takeover = await nodeB.pool.connect();
      try {
        await takeover.query("BEGIN");
        await takeover.query(
          "UPDATE session_leases SET node_id = 'b', token = nextval('lease_tokens') WHERE session_key = $1",
          [key],
        );
        const write = nodeA.appendTranscript([text(key, "racing the takeover")]).then(
          () => "written",
          (err: unknown) => err,
        );
        // wait (bounded) until the server shows A's write blocked on the lease row's lock
        let waiting = 0;
        for (let i = 0; i < 500 && waiting === 0; i++) {
          const { rows } = await nodeB.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE wait_event_type = 'Lock' AND query LIKE '%FROM session_leases%FOR SHARE%' AND application_name = $1`,
            [ts.options.applicationName],
          );
          waiting = rows[0].n;
        }
        expect(waiting).toBe(1);
        await takeover.query("COMMIT");
        expect(await write).toBeInstanceOf(FencedError);
      } finally {
        takeover.release();
      }
      expect(await nodeB.readTranscript(key)).toEqual([]);
    });
  });

  describe("the shared LISTEN connection", () => {
    it("appendRunEvents announces one {k: 'ev', runId, seq, sessionKey} pointer per run on the session's channel, a run's first batch also on the node-level one, after the rows are readable", async () => {
      const writer = await store();
      const reader = await store();
      const notifier = await reader.notifier();
      expect(await reader.notifier()).toBe(notifier);
      const seen: Array<{ pointer: NotifyPointer; readable: Promise<number> }> = [];
      let expected = 4;
      let arrived!: () => void;
      notifier.subscribe((pointer) => {
        seen.push({ pointer, readable: reader.lastRunEventSeq(String(pointer.runId)) });
        if (seen.length === expected) arrived();
      });
      const release = await notifier.listen(sessionChannel(reader.channel, "agent:main:ev"));
      const ev = (runId: string, seq: number) => ({
        runId,
        seq,
        ts: seq,
        sessionKey: "agent:main:ev",
        stream: "assistant",
        json: JSON.stringify({ runId, seq }),
      });
      let all = new Promise<void>((resolve) => {
        arrived = resolve;
      });
      await writer.appendRunEvents([ev("run-x", 1), ev("run-x", 3), ev("run-y", 1), ev("run-x", 2)]);
      await all;
      const byRun = (list: typeof seen) =>
        list.map((s) => s.pointer).sort((a, b) => `${a.runId}${a.k}`.localeCompare(`${b.runId}${b.k}`));
      expect(byRun(seen)).toEqual([
        { k: "ev", runId: "run-x", seq: 3, sessionKey: "agent:main:ev" },
        { k: "rs", runId: "run-x", seq: 3, sessionKey: "agent:main:ev" },
        { k: "ev", runId: "run-y", seq: 1, sessionKey: "agent:main:ev" },
        { k: "rs", runId: "run-y", seq: 1, sessionKey: "agent:main:ev" },
      ]);
      expect(await Promise.all(seen.map((s) => s.readable))).toEqual(seen.map((s) => s.pointer.seq));
      // a later batch of a run already announced: its session's channel only
      expected = 5;
      all = new Promise<void>((resolve) => {
        arrived = resolve;
      });
      await writer.appendRunEvents([ev("run-x", 4)]);
      await all;
      expect(seen[4].pointer).toEqual({ k: "ev", runId: "run-x", seq: 4, sessionKey: "agent:main:ev" });
      release();
    });

    it("a turn's ledger batch (events, audit and cost rows, the run's end) is stored by one statement, and its notices come in order: the events' pointers, the run's end, the cost row's", async () => {
      const writer = await store();
      const reader = await store();
      writer.announceCostRows((row) => ({ k: "cost", runId: row.runId, seq: 0 }));
      const notifier = await reader.notifier();
      const seen: NotifyPointer[] = [];
      let arrived!: () => void;
      const all = new Promise<void>((resolve) => {
        arrived = resolve;
      });
      notifier.subscribe((pointer) => {
        seen.push(pointer);
        if (seen.length === 3) arrived();
      });
      const sent = recordStatements(writer);
      const sessionKey = "agent:main:batch";
      const json = (seq: number) => JSON.stringify({ runId: "run-b", seq });
      const { ignored } = await writer.appendLedgerBatch({
        runEvents: [1, 2].map((seq) => ({
          runId: "run-b",
          seq,
          ts: seq,
          sessionKey,
          stream: "assistant",
          json: json(seq),
        })),
        audit: [
          {
            eventId: "audit-batch",
            sourceSequence: 1,
            occurredAt: 5,
            actor: "cli",
            action: "agent.run.finished",
            status: "succeeded",
            sessionKey,
            runId: "run-b",
            schemaVersion: 1,
            redaction: "metadata_only",
          },
        ],
        cost: [
          {
            id: "cost-batch",
            ts: 5,
            runId: "run-b",
            sessionKey,
            agentId: "main",
            provider: "fake",
            model: "m1",
            inputTokens: 1,
            outputTokens: 2,
            cacheReadTokens: 0,
            cacheWriteTokens: 0,
            totalTokens: 3,
            costUsd: 0.1,
          },
        ],
        runEnds: [{ runId: "run-b", seq: 2, sessionKey }],
      });
      expect(ignored).toBe(0);
      // no BEGIN and COMMIT around it: a round trip (a socket write and read for the node) instead of five
      expect(sent).toHaveLength(1);
      await all;
      expect(seen.map((p) => p.k)).toEqual(["rs", "end", "cost"]);
      expect((await reader.listAuditEvents({ runId: "run-b", limit: 5 })).map((a) => a.eventId)).toEqual([
        "audit-batch",
      ]);
      expect((await reader.listCostRows({ limit: 5 })).map((c) => c.id)).toContain("cost-batch");
    });

    it("closing the store stops its LISTEN connection", async () => {
      const s = await store();
      const notifier = await s.notifier();
      expect(notifier.listening).toBe(true);
      await s.close();
      expect(notifier.listening).toBe(false);
      await expect(s.notifier()).rejects.toThrow("closed");
    });
  });
});
