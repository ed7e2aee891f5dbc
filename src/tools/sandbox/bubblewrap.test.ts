import { BubblewrapBackend } from "./bubblewrap.js";
import { bubblewrapUnavailable } from "./bwrap-availability.test-support.js";
import { sandboxConformance } from "./sandbox.conformance.js";

// real bwrap (CI installs the bubblewrap package; .ci/run); a machine without it or without user namespaces skips
sandboxConformance("bubblewrap", async () => (await bubblewrapUnavailable()) ?? new BubblewrapBackend());
