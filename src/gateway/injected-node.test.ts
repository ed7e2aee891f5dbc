import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../config/load.js";
import { silentLogger } from "../infra/logger.js";
import { composeNode } from "../node/compose.js";
import { ScriptedProvider } from "../providers/scripted.js";
import { GatewayStartError } from "./errors.js";
import { startGateway } from "./server.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-gw-node-"));
  dirs.push(dir);
  return dir;
}

const config = parseConfig({ agents: { defaults: { model: { primary: "s/m" } } } });
const providers = { s: new ScriptedProvider("s", () => ({ text: "done" })) };

describe("a gateway on a node its caller composed", () => {
  it("serves the node's sessions and leaves the node open at close: it is the caller's to close", async () => {
    const node = await composeNode({ role: "gateway", config, stateDir: tempDir(), providers, logger: silentLogger });
    try {
      const gw = await startGateway({ node, port: 0, host: "127.0.0.1", logger: silentLogger });
      const accepted = await node.service.accept({ message: "hi", idempotencyKey: "n1", sessionKey: "agent:main:n" });
      expect((await node.service.final(accepted.runId)).status).toBe("ok");
      const health = (await (await fetch(`http://127.0.0.1:${gw.port}/health`)).json()) as { sessions: number };
      expect(health.sessions).toBe(1);
      await gw.close();
      // the store still answers, and the run's events were written at the gateway's close
      expect(await node.store.countSessions()).toBe(1);
      expect(await node.store.lastRunEventSeq(accepted.runId)).toBeGreaterThan(0);
    } finally {
      await node.close();
    }
  });

  it("a node without the audit ledger (role test) is refused with a start error naming its role", async () => {
    const node = await composeNode({ role: "test", config, stateDir: tempDir(), providers, logger: silentLogger });
    try {
      const err = await startGateway({ node, port: 0, host: "127.0.0.1", logger: silentLogger }).catch((e) => e);
      expect(err).toBeInstanceOf(GatewayStartError);
      expect((err as Error).message).toMatch(/audit ledger \(role "test" has none\)/);
    } finally {
      await node.close();
    }
  });
});
