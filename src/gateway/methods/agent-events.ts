import { ErrorCodes } from "../../protocol/frames.js";
import { agentEventsParamsSchema } from "../../protocol/params.js";
import { defineMethod } from "../context.js";
import { GatewayError } from "../errors.js";
import { DEFAULT_EVENTS_LIMIT, readRunEventsPage, replayRange, runState } from "../run-events-page.js";

/**
 * agent.events (SPEC 15, 20): replays a run's events after `afterSeq`, then the connection gets the rest live.
 *
 * Exactly once, in seq order: the run's live events are held back (`broadcaster.hold(runId)`) from before the replay's end is read
 * (`lastSeq`, the run's newest event at that moment) until the reply is sent and the connection watches the run;
 * the store is read in between (asynchronously), and every event emitted meanwhile is delivered after the reply.
 * Every event after `lastSeq` reaches the connection live after this reply (a connection that may see the run is already offered its events: read scope sees
 * every run, and a write-only client sees the runs it started); every event up to it is in the pages. A paged reply's
 * `nextCursor` keeps that end, so later pages carry only events the connection will not get live.
 *
 * Who may: the same rule as the run's live events (access.ts): operator.read inside the token's sessions, or the
 * operator.write connection that started the run.
 */
export const agentEventsMethod = defineMethod({
  name: "agent.events",
  scope: "read",
  params: agentEventsParamsSchema,
  async handle({ params, conn, gw, reply }) {
    // the record only names the run's session (access) and whether it ended
    const run = await gw.service.sessions.run(params.runId);
    const writer = gw.service.rt.runEvents;
    conn.access.requireRunVisible(params.runId, run?.sessionKey);
    if (!run) {
      throw new GatewayError({
        code: ErrorCodes.notFound,
        message: `params.runId: no run "${params.runId}" (never accepted here, or its record and events were pruned)`,
      });
    }
    gw.broadcaster.hold(run.runId);
    try {
      const range = await replayRange(writer, run.runId, params);
      const state = await runState(writer, run, range.continued ? await writer.lastSeq(run.runId) : range.until);
      const page = await readRunEventsPage(writer, run, range, {
        limit: params.limit ?? DEFAULT_EVENTS_LIMIT,
        maxBytes: gw.limits.maxPageBytes,
        state,
      });
      reply.ok(page);
      if (!range.continued && !state.done) gw.broadcaster.watchRun(run.runId, conn);
    } finally {
      gw.broadcaster.release(run.runId);
    }
  },
});
