/*
 * Issue 25 item 4, short: big history rows, stalled readers, image bombs (test/fixtures/soak/hardening-memory.ts).
 * The long run is test/e2e/soak-hardening-memory.test.ts (`npm run test:soak`).
 */
import { historyPagesSuite, imageBombsSuite, stalledReadersSuite } from "../fixtures/soak/hardening-memory.js";

historyPagesSuite({ rows: 8, rowMb: 2, readers: [1, 4], long: false });
stalledReadersSuite({
  readers: 2,
  maxBufferedBytes: 1024 * 1024,
  slowConsumerMs: 500,
  deadlineMs: 20_000,
  long: false,
});
imageBombsSuite({ messages: 2, perMessage: 2, side: 3000, long: false });
// about 9 MB for each reader, of which the kernel takes about 4: the rest is over the 2 MiB limit, under the ceiling
stalledReadersSuite({
  readers: 2,
  maxBufferedBytes: 2 * 1024 * 1024,
  slowConsumerMs: 500,
  deadlineMs: 10_000,
  stopAfterRuns: 9,
  long: false,
});
