import { Sandboxes, type SandboxesOptions } from "./sandboxes.js";

export { Sandboxes };

/**
 * The sandboxes of a process that runs turns users see (gateway, embedded CLI), checked at load: a config that asks
 * for bubblewrap without bwrap, or docker without a daemon, fails to start with the fix named.
 */
export async function startSandboxes(opts: SandboxesOptions): Promise<Sandboxes> {
  const sandboxes = new Sandboxes(opts);
  await sandboxes.check();
  return sandboxes;
}
