/*
 * Block streaming through the gateway: a chat.send with `blockStreaming: "on"` reaches chat clients as one `delta` per
 * block (not per token), the agent stream carries the `block` events, the final's message is the whole reply, and
 * every frame still validates against the published protocol schema.
 */
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatEventPayload } from "../../src/protocol/payloads.js";
import {
  connectedPeer,
  isLifecycleEnd,
  removeTempDirs,
  TestProvider,
  useTestGateways,
} from "../fixtures/gateway/harness.js";
import { SchemaValidator } from "../fixtures/gateway/json-schema.js";

const gateway = useTestGateways();
const require = createRequire(import.meta.url);
const schemaFile = path.join(path.dirname(require.resolve("@openclaw/gateway-protocol")), "..", "protocol.schema.json");
let v: SchemaValidator;
beforeAll(() => {
  v = new SchemaValidator(JSON.parse(fs.readFileSync(schemaFile, "utf8")) as Record<string, unknown>);
});
afterAll(() => removeTempDirs());

const paragraph = (n: number) => Array.from({ length: n }, (_, i) => `Point ${i} is made in this sentence.`).join(" ");

describe("block streaming over the gateway", () => {
  it("a chat.send with blockStreaming on reaches chat clients as one delta per block, and the final has the whole reply", async () => {
    const reply = `${paragraph(30)}\n\n${paragraph(30)}\n\n${paragraph(10)}`;
    const tokens = Array.from({ length: Math.ceil(reply.length / 20) }, (_, i) => reply.slice(i * 20, (i + 1) * 20));
    const { url } = await gateway({
      provider: new TestProvider(() => ({ before: tokens })),
      gateway: { chatDeltaIntervalMs: 1 },
    });
    const peer = await connectedPeer(url);
    const id = peer.send("chat.send", {
      sessionKey: "blocks",
      message: "explain",
      idempotencyKey: "blk-1",
      blockStreaming: "on",
    });
    expect((await peer.response(id)).ok).toBe(true);
    await peer.seen(isLifecycleEnd("blk-1"), "the run's end");
    const final = await peer.seen((f) => f.event === "chat" && f.payload?.state === "final");
    const blocks = peer
      .all((f) => f.event === "agent" && f.payload?.runId === "blk-1" && f.payload?.stream === "block")
      .map((f) => (f.payload as { data: { index: number; text: string } }).data);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    expect(blocks.map((b) => b.text).join("")).toBe(reply);
    const deltas = peer
      .all((f) => f.event === "chat" && f.payload?.state === "delta")
      .map((f) => f.payload as unknown as Extract<ChatEventPayload, { state: "delta" }>);
    expect(deltas.map((d) => d.deltaText)).toEqual(blocks.map((b) => b.text));
    expect(final.payload).toMatchObject({ message: { content: [{ type: "text", text: reply }] } });
    for (const f of peer.all((x) => x.event === "chat"))
      expect(v.validate(f.payload, "#/definitions/ChatEvent")).toEqual([]);
    peer.close();
  });

  it("a bad blockStreaming value is refused, naming the param", async () => {
    const { url } = await gateway();
    const peer = await connectedPeer(url);
    const res = await peer.call("agent", { message: "x", idempotencyKey: "blk-bad", blockStreaming: "yes" });
    expect(res.ok).toBe(false);
    expect(JSON.stringify(res.error)).toContain("blockStreaming");
    peer.close();
  });
});
