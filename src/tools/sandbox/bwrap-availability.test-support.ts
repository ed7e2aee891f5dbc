import { BubblewrapBackend } from "./bubblewrap.js";

/**
 * Why the bubblewrap tests cannot run here, or undefined when they can. Under CI they must (.ci/run installs the
 * bubblewrap package), so a missing bwrap throws there instead of skipping.
 */
export async function bubblewrapUnavailable(): Promise<string | undefined> {
  try {
    await new BubblewrapBackend().check();
    return undefined;
  } catch (err) {
    const reason = `bubblewrap cannot run here: ${(err as Error).message}`;
    if (process.env.CI === "true" || process.env.CI === "1") {
      throw new Error(`${reason}; under CI the bubblewrap tests must run (.ci/run installs the package)`);
    }
    return reason.split(":").slice(0, 2).join(":");
  }
}
