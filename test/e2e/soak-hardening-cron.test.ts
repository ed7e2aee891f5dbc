/*
 * Soak (only in `npm run test:soak`): cron hardening (issue 25 item 9), long.
 *   LOOPGATE_SOAK_CRON_JOBS        jobs due every second in the flood (default 50)
 *   LOOPGATE_SOAK_CRON_SECONDS     seconds of flood (default 600: 30,000 fires at the default size)
 *   LOOPGATE_SOAK_CRON_KEEP        cron.runLog.keepLines (default 100)
 *   LOOPGATE_SOAK_CRON_HANG_MINUTES  minutes of schedule beside a job that hangs every time (default 60)
 *   LOOPGATE_SOAK_DISK_FULL_CYCLES   fill-and-free cycles of a real tmpfs under a gateway (default 30; item 8)
 */

import { cronHangSuite, cronRunsFloodSuite, storageFullCyclesSuite } from "../fixtures/soak/hardening-cron.js";
import { intKnob } from "../fixtures/soak/knobs.js";

cronRunsFloodSuite({
  jobs: intKnob("LOOPGATE_SOAK_CRON_JOBS", 50),
  seconds: intKnob("LOOPGATE_SOAK_CRON_SECONDS", 600),
  keepLines: intKnob("LOOPGATE_SOAK_CRON_KEEP", 100),
  long: true,
});
cronHangSuite({ minutes: intKnob("LOOPGATE_SOAK_CRON_HANG_MINUTES", 60), long: true });
storageFullCyclesSuite({ cycles: intKnob("LOOPGATE_SOAK_DISK_FULL_CYCLES", 30), tmpfsMb: 8, long: true });
