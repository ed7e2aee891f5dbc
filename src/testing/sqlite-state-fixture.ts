import { createHash } from "node:crypto";
import { SqliteStoreAdapter } from "../storage/sqlite-adapter.js";
import { openStore } from "../storage/sqlite-store.js";

/** A 1x1 PNG: a real image, small enough for a test. */
export const TINY_PNG_BASE64 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

export interface StateFixture {
  sessionKeys: string[];
  /** the session whose first user message carries an image */
  imageSession: string;
  /** the input left queued, as a gateway that stopped before running it would leave it */
  queuedRunId: string;
  queuedSession: string;
  /** transcript rows in each session (all in generation 1) */
  rowsPerSession: number;
  auditRows: number;
  cronJobId: string;
}

/**
 * Fills a state dir's SQLite store through the real store, as a gateway would have left it: `sessions` sessions with
 * one finished turn each (user, assistant with a tool call, tool result, assistant; the first user message of the
 * first session carries an image), the run record of each turn with its run events and audit rows, a cron job with
 * one run, and one more input left queued in the last session (its accepting process gone). Times come from `t0`:
 * a gateway prunes finished runs and audit rows older than its retention at start, so a state a gateway is to serve
 * needs a recent `t0`.
 */
export async function fillStateDir(stateDir: string, sessions: number, t0 = 1_700_000_000_000): Promise<StateFixture> {
  const store = new SqliteStoreAdapter(openStore(stateDir));
  const sessionKeys: string[] = [];
  let auditRows = 0;
  try {
    for (let i = 0; i < sessions; i++) {
      const key = `agent:main:migrated-${String(i).padStart(3, "0")}`;
      sessionKeys.push(key);
      const at = t0 + i * 1000;
      const runId = `run-old-${i}`;
      await store.acceptInput(
        { key, agentId: "main", now: at },
        {
          runId,
          sessionKey: key,
          status: "queued",
          acceptedAt: at,
          params: { message: `question ${i}`, idempotencyKey: runId, agentId: "main", sessionKey: key },
          receipt: { kind: "started" },
        },
      );
      await store.updateRun(runId, { status: "running", startedAt: at + 1 });
      const userContent =
        i === 0
          ? [
              { type: "text" as const, text: `question ${i}` },
              { type: "image" as const, mimeType: "image/png", data: TINY_PNG_BASE64 },
            ]
          : `question ${i}`;
      await store.appendTranscript([
        { sessionKey: key, kind: "message", runId, createdAt: at + 2, message: { role: "user", content: userContent } },
        {
          sessionKey: key,
          kind: "message",
          runId,
          createdAt: at + 3,
          message: {
            role: "assistant",
            content: [{ type: "toolCall", id: `call-${i}`, name: "read", arguments: { path: "a.txt" } }],
            stopReason: "tool_calls",
          },
        },
        {
          sessionKey: key,
          kind: "message",
          runId,
          createdAt: at + 4,
          message: { role: "toolResult", toolCallId: `call-${i}`, toolName: "read", content: "hello", isError: false },
        },
        {
          sessionKey: key,
          kind: "message",
          runId,
          createdAt: at + 5,
          message: { role: "assistant", content: [{ type: "text", text: `answer ${i}` }], stopReason: "stop" },
        },
      ]);
      await store.appendRunEvents(
        ["start", "end"].map((phase, seq) => ({
          runId,
          seq: seq + 1,
          ts: at + 1 + seq * 5,
          sessionKey: key,
          stream: "lifecycle",
          json: JSON.stringify({ runId, seq: seq + 1, stream: "lifecycle", data: { phase } }),
        })),
      );
      await store.updateRun(runId, {
        status: "ok",
        endedAt: at + 6,
        result: { runId, status: "ok", payloads: [{ text: `answer ${i}` }] },
      });
      await store.updateSession(key, { updatedAt: at + 6, inputTokens: 10, outputTokens: 5, totalTokens: 15 });
      await store.appendAuditEvents(
        (["agent.run.started", "agent.run.finished"] as const).map((action, n) => ({
          eventId: `audit-${i}-${n}`,
          sourceSequence: n + 1,
          occurredAt: at + 1 + n * 5,
          actor: "cli",
          action,
          status: n === 0 ? ("started" as const) : ("succeeded" as const),
          sessionKey: key,
          runId,
          schemaVersion: 1,
          redaction: "metadata_only" as const,
        })),
      );
      auditRows += 2;
    }
    const queuedSession = sessionKeys[sessionKeys.length - 1] as string;
    const queuedRunId = "run-left-queued";
    const queuedAt = t0 + sessions * 1000;
    await store.acceptInput(
      { key: queuedSession, agentId: "main", now: queuedAt },
      {
        runId: queuedRunId,
        sessionKey: queuedSession,
        status: "queued",
        acceptedAt: queuedAt,
        // accepted by a process that is gone (pid 2^22 + 1 is above Linux's pid_max), so recovery takes it over
        params: {
          message: "the message that was still queued",
          idempotencyKey: queuedRunId,
          agentId: "main",
          sessionKey: queuedSession,
          owner: { pid: 4_194_305, starttime: null },
        },
        receipt: { kind: "queued", position: 1, mode: "followup" },
      },
    );
    const cronJobId = "nightly";
    await store.addCronJob({
      // disabled: a gateway started on the copy must not fire it as a missed run (the e2e test counts sessions)
      spec: { id: cronJobId, schedule: "0 3 * * *", message: "nightly report", enabled: false },
      createdAt: t0,
    });
    const cronRun = await store.addCronRun({ jobId: cronJobId, scheduledAt: t0, status: "running", startedAt: t0 });
    await store.updateCronRun(cronRun, { status: "ok", endedAt: t0 + 10 });
    return {
      sessionKeys,
      imageSession: sessionKeys[0] as string,
      queuedRunId,
      queuedSession,
      rowsPerSession: 4,
      auditRows,
      cronJobId,
    };
  } finally {
    await store.close();
  }
}

/** sha256 of a file's bytes, to show it was not changed. */
export function sha256Of(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}
