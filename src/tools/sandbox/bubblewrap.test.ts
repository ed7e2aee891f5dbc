import { BubblewrapBackend } from "./bubblewrap.js";
import { sandboxConformance } from "./sandbox.conformance.js";

// real bwrap (CI installs the bubblewrap package; .ci/run); a machine without it or without user namespaces skips
sandboxConformance("bubblewrap", async () => {
  const backend = new BubblewrapBackend();
  try {
    await backend.check();
    return backend;
  } catch (err) {
    return `bubblewrap cannot run here: ${(err as Error).message.split(":")[0]}`;
  }
});
