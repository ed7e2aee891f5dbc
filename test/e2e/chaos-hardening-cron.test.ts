/*
 * Cron and disk-full hardening (issue 25 items 9 and 8), short: a flood of fires keeps cron_runs bounded, a job that
 * hangs every time holds back no other job, and a run told "storage full" never runs again across fill-and-free
 * cycles. The long runs are test/e2e/soak-hardening-cron.test.ts (`npm run test:soak`).
 */
import { cronHangSuite, cronRunsFloodSuite, storageFullCyclesSuite } from "../fixtures/soak/hardening-cron.js";

cronRunsFloodSuite({ jobs: 5, seconds: 60, keepLines: 10, long: false });
cronHangSuite({ minutes: 3, long: false });
storageFullCyclesSuite({ cycles: 1, tmpfsMb: 2, long: false });
