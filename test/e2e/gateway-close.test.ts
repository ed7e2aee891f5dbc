/*
 * What a closed gateway leaves behind: when close() resolves, nothing the gateway started is still writing into its
 * state dir. Real gateway on loopback, a real plugin file loaded from plugins.load.paths.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../../src/client/gateway-client.js";
import { removeTempDirs, startTestGateway, tempStateDir } from "../fixtures/gateway/harness.js";

afterAll(() => removeTempDirs());

describe("closing a gateway", () => {
  it("a gateway closed while its plugins were still loading: close waits for them, so the state dir can be removed at once (regression: ENOTEMPTY on removing it)", async () => {
    const stateDir = tempStateDir();
    const marker = path.join(stateDir, "plugin-finished");
    const plugin = path.join(tempStateDir(), "slow-plugin.mjs");
    // a plugin whose registration takes a while and then writes into the state dir, as workspace seeding does
    fs.writeFileSync(
      plugin,
      `import fs from "node:fs";
export const id = "slow";
export async function register() {
  await new Promise((resolve) => setTimeout(resolve, 300));
  fs.writeFileSync(${JSON.stringify(marker)}, "done");
}
`,
    );
    const g = await startTestGateway({ stateDir, config: { plugins: { load: { paths: [plugin] } } } });
    await g.gw.close();
    // the background init finished before close resolved: its last write is there, and nothing comes after it
    expect(fs.readFileSync(marker, "utf8")).toBe("done");
    expect(fs.readdirSync(path.join(stateDir, "workspace")).sort()).toEqual([
      "AGENTS.md",
      "BOOTSTRAP.md",
      "HEARTBEAT.md",
      "IDENTITY.md",
      "SOUL.md",
      "TOOLS.md",
      "USER.md",
    ]);
    fs.rmSync(stateDir, { recursive: true });
    expect(fs.existsSync(stateDir)).toBe(false);
  });

  it("gateway-hooks-fire-from-start-gateway", async () => {
    const stateDir = tempStateDir();
    const log = path.join(stateDir, "lifecycle.log");
    const plugin = path.join(tempStateDir(), "lifecycle-plugin.mjs");
    // an embedding app's plugin: what it hears of the gateway's life, one line each, in order
    fs.writeFileSync(
      plugin,
      `import fs from "node:fs";
export const id = "lifecycle";
export function register(api) {
  api.on("gateway_start", (e) => fs.appendFileSync(${JSON.stringify(log)}, "start " + e.port + "\\n"));
  api.on("gateway_stop", (e) => fs.appendFileSync(${JSON.stringify(log)}, "stop " + e.reason + "\\n"));
}
`,
    );
    // startGateway() in-process, as an app embedding Loopgate calls it (no CLI)
    const g = await startTestGateway({ stateDir, config: { plugins: { load: { paths: [plugin] } } } });
    await g.gw.ready;
    const client = await GatewayClient.connect({ url: g.url, client: { id: "test", mode: "test" } });
    expect(await client.request("health")).toMatchObject({ ok: true });
    await client.close();
    await g.gw.close("embedder stopping");
    await g.gw.close("closed twice");
    const lines = fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : [];
    console.log(`plugin heard: ${JSON.stringify(lines)}`);
    expect(lines).toEqual([`start ${g.gw.port}`, "stop embedder stopping"]);
  });
});
