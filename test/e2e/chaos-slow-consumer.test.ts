/*
 * The slow consumer, short: one client stops reading while a quarter MiB of text per run streams to it and to two
 * clients that keep reading. The long run is test/e2e/soak-slow-consumer.test.ts (`npm run test:soak`).
 */
import { slowConsumerSuite } from "../fixtures/soak/suites.js";

slowConsumerSuite({ slowClients: 1, fastClients: 2, runsAfterDrop: 3, long: false });
