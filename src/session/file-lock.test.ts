import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { FileSessionLock } from "./file-lock.js";
import { sessionLockConformance } from "./lock.conformance.js";

// The file lock's owner is the process: a second owner needs a second process, which write-lock.test.ts and
// test/e2e/two-process-lock.test.ts start for real; here the one-owner cases run.
sessionLockConformance(
  "file lock",
  async () => {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-lock-"));
    return {
      locks: new FileSessionLock({ stateDir }),
      close: async () => fs.rmSync(stateDir, { recursive: true, force: true }),
    };
  },
  { hasPeer: false },
);
