/*
 * Cron hardening (issue 25 item 9), short: a flood of fires keeps cron_runs bounded, and a job that hangs every
 * time holds back no other job. The long runs are test/e2e/soak-hardening-cron.test.ts (`npm run test:soak`).
 */
import { cronHangSuite, cronRunsFloodSuite } from "../fixtures/soak/hardening-cron.js";

cronRunsFloodSuite({ jobs: 5, seconds: 60, keepLines: 10, long: false });
cronHangSuite({ minutes: 3, long: false });
