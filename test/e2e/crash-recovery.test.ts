import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../dist/client/index.js";
import { assertBuilt, scriptedConfig as config, killHard, spawnGateway } from "../fixtures/crash/gateway-process.js";

// kill -9 the gateway while a slow turn runs and three messages wait behind it; after a restart on the same
// state dir every message either ran or is reported — none vanished.
const children: ChildProcess[] = [];
const startGateway = (stateDir: string, configFile: string) => spawnGateway(stateDir, configFile, children);

beforeAll(assertBuilt);

const stateDirs: string[] = [];

afterEach(async () => {
  // the state dirs go once no gateway can still be writing into them
  await Promise.all(children.splice(0).map(killHard));
  for (const d of stateDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe("a gateway killed with kill -9", () => {
  it("after a restart, the interrupted run is reported and every queued message runs, in order", async () => {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-crash-"));
    stateDirs.push(stateDir);
    const first = await startGateway(stateDir, config(stateDir, "slow", "slow.script.json5"));
    const client = await GatewayClient.connect({ url: first.url });
    const sessionKey = "crash-test";
    const started = new Promise<void>((resolve) => {
      void client
        .agent(
          { message: "first (slow)", idempotencyKey: "m1", sessionKey },
          { onEvent: (ev) => ev.stream === "lifecycle" && ev.data.phase === "start" && resolve() },
        )
        .catch(() => undefined);
    });
    await started;
    for (const id of ["m2", "m3", "m4"]) {
      await new Promise<void>((resolve) => {
        void client
          .agent(
            { message: `queued ${id}`, idempotencyKey: id, sessionKey, queueMode: "followup" },
            { onAccepted: () => resolve() },
          )
          .catch(() => undefined);
      });
    }
    first.child.kill("SIGKILL");
    await new Promise((r) => first.child.once("exit", r));
    await client.close().catch(() => undefined);

    const second = await startGateway(stateDir, config(stateDir, "fast", "fast.script.json5"));
    const after = await GatewayClient.connect({ url: second.url });
    try {
      const interrupted = await after.agentWait("m1", 10000);
      expect(interrupted.status).toBe("error");
      expect(interrupted.stopReason).toBe("gateway_restart");
      for (const id of ["m2", "m3", "m4"]) {
        const w = await after.agentWait(id, 15000);
        expect(w.status, `${id} ran after the restart`).toBe("ok");
      }
      const history = (await after.request("chat.history", { sessionKey: `agent:main:${sessionKey}` })) as {
        messages?: Array<Record<string, unknown>>;
      };
      const text = JSON.stringify(history);
      const order = ["queued m2", "queued m3", "queued m4"].map((t) => text.indexOf(`ran: ${t}`));
      expect(order.every((i) => i >= 0)).toBe(true);
      expect([...order].sort((a, b) => a - b)).toEqual(order);
    } finally {
      await after.close();
    }
  }, 60000);
});
