/*
 * Soak (only in `npm run test:soak`): slow consumers, long.
 *   LOOPGATE_SOAK_SLOW_CLIENTS  clients that stop reading (default 5)
 *   LOOPGATE_SOAK_FAST_CLIENTS  clients that keep reading and must get every event (default 5)
 *   LOOPGATE_SOAK_RUNS          runs streamed after the slow clients are dropped (default 20)
 */
import { intKnob } from "../fixtures/soak/knobs.js";
import { slowConsumerSuite } from "../fixtures/soak/suites.js";

slowConsumerSuite({
  slowClients: intKnob("LOOPGATE_SOAK_SLOW_CLIENTS", 5),
  fastClients: intKnob("LOOPGATE_SOAK_FAST_CLIENTS", 5),
  runsAfterDrop: intKnob("LOOPGATE_SOAK_RUNS", 20),
  long: true,
});
