// One `exec` of `true` through the real exec tool, in the bubblewrap sandbox against the same tool without one
// (the floor): what a sandbox adds to every command. Rounds alternate the two. Options: { iterations }.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createExecTool } from "../../dist/tools/exec.js";
import { BubblewrapBackend } from "../../dist/tools/sandbox/bubblewrap.js";
import { childOptions, emitResult } from "../lib/child.mjs";
import { nowMs, summarize } from "../lib/stats.mjs";

const opts = childOptions();
const backend = new BubblewrapBackend();
try {
  await backend.check();
} catch (err) {
  emitResult({ unavailable: `bubblewrap cannot run here: ${err.message.split(":")[0]}` });
  process.exit(0);
}
const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-bench-sandbox-")));
const ws = path.join(root, "ws");
const scopeDir = path.join(root, "state", "sandboxes", "bench");
fs.mkdirSync(ws, { recursive: true });
fs.mkdirSync(scopeDir, { recursive: true });
const sandbox = await backend.open({
  scopeKey: "bench",
  scopeDir,
  workspaceDir: ws,
  workspaceAccess: "rw",
  network: "none",
  binds: [],
  hidden: [path.join(root, "state")],
  image: "unused",
});
const exec = createExecTool();
const signal = new AbortController().signal;
const plain = { workspaceDir: ws, signal };
const boxed = {
  workspaceDir: ws,
  signal,
  sandbox: { sandbox, scope: "session", workspaceAccess: "rw", network: "none", why: "bench", env: [] },
};
const once = async (ctx) => {
  const t0 = nowMs();
  const out = await exec.execute({ command: "true" }, ctx);
  if (out.isError) throw new Error(`exec true failed: ${out.content}`);
  return nowMs() - t0;
};
for (let i = 0; i < 5; i++) {
  await once(plain);
  await once(boxed);
}
const unsandboxed = [];
const sandboxed = [];
for (let i = 0; i < (opts.iterations ?? 50); i++) {
  unsandboxed.push(await once(plain));
  sandboxed.push(await once(boxed));
}
fs.rmSync(root, { recursive: true, force: true });
emitResult({ unsandboxedMs: summarize(unsandboxed), sandboxedMs: summarize(sandboxed) });
