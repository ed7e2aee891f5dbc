/*
 * Soak (only in `npm run test:soak`): load with event-integrity checks, long.
 *   LOOPGATE_SOAK_SESSIONS  sessions, all at once (default 1000)
 *   LOOPGATE_SOAK_TURNS     turns per session, one after the other (default 10)
 *   LOOPGATE_SOAK_CLIENTS   client connections the sessions are spread over (default 8)
 */
import { intKnob } from "../fixtures/soak/knobs.js";
import { loadSuite } from "../fixtures/soak/suites.js";

loadSuite({
  sessions: intKnob("LOOPGATE_SOAK_SESSIONS", 1000),
  turns: intKnob("LOOPGATE_SOAK_TURNS", 10),
  clients: intKnob("LOOPGATE_SOAK_CLIENTS", 8),
  long: true,
});
