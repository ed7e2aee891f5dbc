/*
 * Secrets at rest: tool-argument and tool-result secrets are masked in events; every read path of the stored
 * transcript (chat.history over a real gateway, `loopgate sessions show` as a child process) masks them the same
 * way, while the model keeps getting the real values in its context.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { ModelProvider, ModelRequest, ModelStreamEvent } from "../../src/providers/types.js";
import { SqliteStore } from "../../src/storage/sqlite-store.js";
import { connectedPeer, isLifecycleEnd, tempStateDir, useTestGateways } from "../fixtures/gateway/harness.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const cli = path.join(root, "dist", "cli", "main.js");

const gateway = useTestGateways();

const TOKEN = `ghp_${"A1b2C3d4E5".repeat(4)}`;
const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 };

/** Writes a file with a token in it, reads it back, then answers; it keeps every request it was sent. */
class SecretHandlingModel implements ModelProvider {
  readonly id = "t";
  readonly api = "scripted" as const;
  readonly requests: ModelRequest[] = [];

  async *stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    // the signal and the run's stream beat are live objects, not data
    this.requests.push(
      structuredClone({ ...request, signal: undefined, streamBeat: undefined }) as unknown as ModelRequest,
    );
    const step = this.requests.length;
    if (step === 1) {
      const args = { path: "creds.env", content: `GITHUB_TOKEN=${TOKEN}\n` };
      yield { type: "tool_call", id: "c1", name: "write", arguments: args };
    } else if (step === 2) {
      yield { type: "tool_call", id: "c2", name: "read", arguments: { path: "creds.env" } };
    } else {
      yield { type: "text_delta", delta: "saved it" };
    }
    yield { type: "done", stopReason: step < 3 ? "tool_calls" : "stop", usage };
  }
}

describe("chat.history returns tool secrets in clear", () => {
  it("chat.history masks tool-argument and tool-result secrets as events do; the model saw the real values", async () => {
    const model = new SecretHandlingModel();
    const workspace = tempStateDir();
    const g = await gateway({
      provider: model as unknown as never,
      config: { agents: { defaults: { model: { primary: "t/m" }, workspace } } },
    });
    const peer = await connectedPeer(g.url);
    const accepted = await peer.call("agent", { message: "store my token", idempotencyKey: "secret-run" });
    await peer.seen(isLifecycleEnd(String(accepted.payload?.runId)), "the run's end");
    expect(fs.readFileSync(path.join(workspace, "creds.env"), "utf8")).toContain(TOKEN);

    const history = await peer.call("chat.history", { sessionKey: "main" });
    const text = JSON.stringify(history.payload);
    expect(text).toContain("saved it");
    expect(text).toContain("GITHUB_TOKEN=[redacted]");
    expect(text).not.toContain(TOKEN);

    const toolStart = peer.frames.find((f) => f.payload?.stream === "tool" && f.payload?.runId === "secret-run");
    expect(JSON.stringify(toolStart?.payload)).not.toContain(TOKEN);
    // the model's third request carries the real call and the real file content
    expect(JSON.stringify(model.requests[2]?.messages)).toContain(TOKEN);
  });
});

describe("loopgate sessions show prints tool secrets in clear", () => {
  it("sessions show (text and --json) masks secrets in stored tool calls and results", () => {
    const stateDir = tempStateDir();
    const store = new SqliteStore(path.join(stateDir, "loopgate.sqlite"));
    store.ensureSession("agent:main:main", "main", 1);
    store.appendTranscript([
      {
        sessionKey: "agent:main:main",
        kind: "message",
        createdAt: 1,
        message: {
          role: "assistant",
          content: [
            { type: "toolCall", id: "c1", name: "exec", arguments: { command: "deploy", apiKey: "hunter2-key" } },
          ],
        },
      },
      {
        sessionKey: "agent:main:main",
        kind: "message",
        createdAt: 2,
        message: { role: "toolResult", toolCallId: "c1", toolName: "exec", content: `token ${TOKEN}`, isError: false },
      },
    ]);
    store.close();
    const env = { ...process.env, LOOPGATE_STATE_DIR: stateDir, HOME: stateDir, NO_COLOR: "1" };
    for (const args of [
      ["sessions", "show", "main"],
      ["sessions", "show", "main", "--json"],
    ]) {
      const r = spawnSync(process.execPath, [cli, ...args], { env, encoding: "utf8" });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toContain("[redacted]");
      expect(r.stdout).not.toContain("hunter2-key");
      expect(r.stdout).not.toContain(TOKEN);
    }
  });
});
