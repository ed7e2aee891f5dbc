/*
 * The documented example plugin (examples/plugins/redact-at-rest.mjs) through a real gateway: the tool result the
 * model reads carries the secret; the row stored in loopgate.sqlite does not.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { ModelProvider, ModelRequest, ModelStreamEvent } from "../../src/providers/types.js";
import { connectedPeer, isLifecycleEnd, tempStateDir, useTestGateways } from "../fixtures/gateway/harness.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const plugin = path.join(root, "examples", "plugins", "redact-at-rest.mjs");

const gateway = useTestGateways();

const ACME = `acme_${"Zx9".repeat(8)}`;
const GITHUB = `ghp_${"Q7w".repeat(12)}`;
const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 };

/** Reads `.env`, then answers; keeps the messages of every request. */
class EnvReader implements ModelProvider {
  readonly id = "t";
  readonly api = "scripted" as const;
  readonly seen: string[] = [];
  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    this.seen.push(JSON.stringify(request.messages));
    if (this.seen.length === 1) {
      yield { type: "tool_call", id: "r1", name: "read", arguments: { path: ".env" } };
      yield { type: "done", stopReason: "tool_calls", usage };
      return;
    }
    yield { type: "text_delta", delta: "read it" };
    yield { type: "done", stopReason: "stop", usage };
  }
}

describe("tool results are stored with their secrets in clear", () => {
  it("the redact-at-rest example plugin masks the stored tool result; the model read the real one", async () => {
    const workspace = tempStateDir();
    fs.writeFileSync(path.join(workspace, ".env"), `GITHUB_TOKEN=${GITHUB}\nACME_LINK=${ACME}\nPORT=8080\n`);
    const model = new EnvReader();
    const g = await gateway({
      provider: model as unknown as never,
      config: {
        agents: { defaults: { model: { primary: "t/m" }, workspace } },
        plugins: {
          load: { paths: [plugin] },
          entries: { "redact-at-rest": { config: { patterns: ["acme_[A-Za-z0-9]{24}"] } } },
        },
      },
    });
    await g.gw.service.rt.init();
    const peer = await connectedPeer(g.url);
    const accepted = await peer.call("agent", { message: "what is in .env?", idempotencyKey: "env-run" });
    await peer.seen(isLifecycleEnd(String(accepted.payload?.runId)), "the run's end");

    // the model's second request holds the tool result as the tool returned it
    expect(model.seen[1]).toContain(GITHUB);
    expect(model.seen[1]).toContain(ACME);

    const db = new Database(path.join(g.stateDir, "loopgate.sqlite"), { readonly: true });
    const stored = (db.prepare("SELECT data FROM transcript ORDER BY seq").all() as Array<{ data: string }>)
      .map((r) => r.data)
      .join("\n");
    db.close();
    expect(stored).toContain("GITHUB_TOKEN=[redacted]");
    expect(stored).toContain("ACME_LINK=[redacted]");
    expect(stored).toContain("PORT=8080");
    expect(stored).not.toContain(GITHUB);
    expect(stored).not.toContain(ACME);
  });
});
