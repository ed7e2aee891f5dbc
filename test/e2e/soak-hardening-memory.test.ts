/*
 * Soak (only in `npm run test:soak`): issue 25 item 4 at the sizes, with the gateway's default limits.
 *   LOOPGATE_SOAK_HISTORY_ROWS     rows in the session (default 32)
 *   LOOPGATE_SOAK_HISTORY_ROW_MB   MB per row (default 15)
 *   LOOPGATE_SOAK_STALLED_READERS  readers that stop reading (default 5)
 *   LOOPGATE_SOAK_BOMB_MESSAGES    messages sent at once (default 8)
 *   LOOPGATE_SOAK_BOMBS_PER_MESSAGE image attachments per message (default 8)
 *   LOOPGATE_SOAK_BOMB_SIDE        pixels per side of each bomb (default 8000)
 */
import { historyPagesSuite, imageBombsSuite, stalledReadersSuite } from "../fixtures/soak/hardening-memory.js";
import { intKnob } from "../fixtures/soak/knobs.js";

historyPagesSuite({
  rows: intKnob("LOOPGATE_SOAK_HISTORY_ROWS", 32),
  rowMb: intKnob("LOOPGATE_SOAK_HISTORY_ROW_MB", 15),
  readers: [1, 4],
  long: true,
});
stalledReadersSuite({ readers: intKnob("LOOPGATE_SOAK_STALLED_READERS", 5), deadlineMs: 120_000, long: true });
// readers that take in a little now and then while runs come at a steady pace
stalledReadersSuite({
  readers: intKnob("LOOPGATE_SOAK_STALLED_READERS", 5),
  deadlineMs: 120_000,
  paceMs: 100,
  trickleEveryMs: 1000,
  long: true,
});
// readers over the limit when the last frame for them went out: cut by the clock, not by a next frame
stalledReadersSuite({
  readers: intKnob("LOOPGATE_SOAK_STALLED_READERS", 5),
  deadlineMs: 30_000,
  stopAfterRuns: 20,
  long: true,
});
imageBombsSuite({
  messages: intKnob("LOOPGATE_SOAK_BOMB_MESSAGES", 8),
  perMessage: intKnob("LOOPGATE_SOAK_BOMBS_PER_MESSAGE", 8),
  side: intKnob("LOOPGATE_SOAK_BOMB_SIDE", 8000),
  long: true,
});
