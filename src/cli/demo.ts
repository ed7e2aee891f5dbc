import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseConfig } from "../config/index.js";
import { runOutputWithInterrupt } from "./agent.js";
import { exitCodeFor } from "./run-output.js";

/**
 * The offline demo: a scripted model (no network, no API key) asks for the `exec` tool, the tool runs in a fresh
 * workspace, and the reply streams. State goes to a temporary directory unless LOOPGATE_STATE_DIR is set.
 */
export async function runDemo(opts: { json?: boolean; color?: boolean }): Promise<number> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const script = path.resolve(here, "../../examples/demo-script.json5");
  const stateDir = process.env.LOOPGATE_STATE_DIR || fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-demo-"));
  const config = parseConfig({
    agents: { defaults: { model: { primary: "demo/scripted-demo" } } },
    models: { providers: { demo: { api: "scripted", script, models: [{ id: "scripted-demo" }] } } },
  });
  if (!opts.json) process.stderr.write(`loopgate demo — offline, scripted model; state in ${stateDir}\n\n`);
  const { openLocal, runLocalTurn } = await import("./local.js");
  const local = await openLocal({ loaded: { config, stateDir } });
  const { out, intr } = runOutputWithInterrupt(opts, "aborted");
  try {
    process.stdout.write(opts.json ? "" : "> what is in my workspace?\n\n");
    const final = await runLocalTurn(local.service, { message: "what is in my workspace?" }, out.render, intr.signal);
    out.finish(final);
    return exitCodeFor(final, intr.interrupted());
  } finally {
    out.dispose();
    intr.dispose();
    await local.close();
  }
}
