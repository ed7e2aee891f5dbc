import { collectPrompt, takeCollectBatch } from "./collect.js";
import { addLiveRun, setReceipt } from "./live-runs.js";
import { overflowPrompt } from "./overflow.js";
import { launchTurn } from "./turn.js";
import type { QueueContext, ResolvedRequest, SessionState } from "./types.js";

/** When the quiet window has passed: the overflow notice first, else the oldest message (with its collect batch). */
export function startNextTurn(ctx: QueueContext, s: SessionState): void {
  // While draining, queued inputs stay "queued" in the store for the next start to run.
  if (s.active || ctx.draining) return;
  s.immediate = false;
  if (s.overflow.count > 0) {
    startOverflowTurn(ctx, s);
    return;
  }
  const first = s.pending.shift();
  if (!first) {
    ctx.schedule(s);
    return;
  }
  const batch = first.mode === "collect" ? takeCollectBatch(first, s.pending) : [first];
  if (batch.length === 1) {
    launchTurn(ctx, s, first, [], first.req.message);
    return;
  }
  const rest = batch.slice(1);
  for (const r of rest) {
    r.phase = "merged";
    setReceipt(ctx, r, { kind: "collected", into: first.runId, count: batch.length });
  }
  setReceipt(ctx, first, { kind: "collected", into: first.runId, count: batch.length });
  launchTurn(ctx, s, first, rest, collectPrompt(batch.map((r) => r.req.message)));
}

/** The [Queue overflow] notice is a turn of its own, stored as a queued run like any accepted message. */
function startOverflowTurn(ctx: QueueContext, s: SessionState): void {
  const text = overflowPrompt(s.overflow.summaries, s.overflow.count);
  s.overflow = { count: 0, summaries: [] };
  const template = s.pending[0]?.req;
  const runId = `overflow-${ctx.deps.newId()}`;
  const now = ctx.deps.clock.now();
  const req: ResolvedRequest = {
    ...(template ?? { agentId: ctx.deps.defaultAgentId() }),
    message: text,
    idempotencyKey: runId,
    sessionKey: s.key,
  };
  const committed = ctx.deps.store.createRun({
    runId,
    sessionKey: s.key,
    status: "queued",
    acceptedAt: now,
    params: req as unknown as Record<string, unknown>,
  });
  const run = addLiveRun(ctx, { runId, sessionKey: s.key, req, mode: "followup", acceptedAt: now, committed });
  launchTurn(ctx, s, run, [], text);
}
