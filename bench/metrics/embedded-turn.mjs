// Embedded warm turn: AgentService.accept + final in this process, SQLite on, the real openai-completions
// provider against the fake model process, the noop tool registered as an extra tool.
// A "warm" turn runs in a warm process (provider, workspace, statements ready) in a session that already exists.
// Sessions rotate every `turnsPerSession` turns, so the history sent to the model stays short and every sample
// measures the same work. Options: { baseUrl, turns, warmup, turnsPerSession, stateDir }.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseConfig } from "../../dist/config/index.js";
import { createLogger } from "../../dist/infra/logger.js";
import { composeNode } from "../../dist/node/compose.js";
import { childOptions, emitResult } from "../lib/child.mjs";
import { startProfile } from "../lib/inspector-profile.mjs";
import { benchConfig, FINAL_TEXT, noopTool } from "../lib/model.mjs";
import { nowMs, summarize } from "../lib/stats.mjs";

const opts = childOptions();
const stateDir = opts.stateDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-bench-embedded-"));
const config = parseConfig(benchConfig(opts.baseUrl));
const node = await composeNode({ role: "bench", config, stateDir, logger: createLogger(), tools: [noopTool] });
const { service } = node;

let n = 0;
const perSession = opts.turnsPerSession ?? 10;
async function turn(i) {
  const accepted = await service.accept({
    message: "hello",
    idempotencyKey: `bench-${process.pid}-${n++}`,
    sessionKey: `bench-${Math.floor(i / perSession)}`,
  });
  const final = await service.final(accepted.runId);
  if (final.status !== "ok" || final.result.payloads[0]?.text !== FINAL_TEXT) {
    throw new Error(`turn failed: ${JSON.stringify(final)}`);
  }
  return final;
}

const warmup = opts.warmup ?? 30;
for (let i = 0; i < warmup; i++) await turn(i);
// profile: a .cpuprofile path; only the measured turns are profiled
const stopProfile = await startProfile(opts.profile);
const samples = [];
const cpu0 = process.cpuUsage();
const turns = opts.turns ?? 200;
// one measured turn in `perSession` is a session's first (the session row and skills snapshot are created)
for (let i = warmup; i < warmup + turns; i++) {
  const t0 = nowMs();
  await turn(i);
  samples.push(nowMs() - t0);
}
const cpu = process.cpuUsage(cpu0);
await stopProfile();
// the node writes what its audit ledger and run-event writer hold, then closes the store (node/compose.ts)
await node.close();
if (!opts.stateDir) fs.rmSync(stateDir, { recursive: true, force: true });
// CPU time per turn is much less disturbed by other load on the machine than wall time
emitResult({ turnMs: summarize(samples), cpuMsPerTurn: (cpu.user + cpu.system) / 1000 / samples.length });
