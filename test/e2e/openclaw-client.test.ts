/*
 * Issue 16, must-have 7: an operator client written only from the published OpenClaw protocol schema
 * (@openclaw/gateway-protocol's protocol.schema.json), the way OpenClaw's Control UI talks: a raw WebSocket, its own
 * Ed25519 device key from node:crypto signing the v2 payload, `auth.password` beside `auth.token`. It imports
 * nothing of Loopgate's client or protocol code; the gateway side is a real gateway on a loopback port with a
 * scripted model. Every request it sends and every response and event it gets is checked against the schema where
 * the schema defines the shape.
 */
import { createHash, generateKeyPairSync, sign } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { removeTempDirs, startTestGateway, TestProvider } from "../fixtures/gateway/harness.js";
import { SchemaValidator } from "../fixtures/gateway/json-schema.js";

const require = createRequire(import.meta.url);
const schemaFile = path.join(path.dirname(require.resolve("@openclaw/gateway-protocol")), "..", "protocol.schema.json");
let v: SchemaValidator;
beforeAll(() => {
  v = new SchemaValidator(JSON.parse(fs.readFileSync(schemaFile, "utf8")) as Record<string, unknown>);
});
afterAll(() => removeTempDirs());

const WAIT_MS = 8000;
type Json = Record<string, unknown>;
type Frame = { type: string; id?: string; ok?: boolean; event?: string; payload?: Json; error?: Json; seq?: number };

function schemaIssues(value: unknown, def: string): string[] {
  return v.validate(value, def === "#" ? "#" : `#/definitions/${def}`).map((i) => `${i.path}: ${i.message}`);
}

/** The client: frames in and out, each checked against the schema's frame union. */
class SchemaClient {
  readonly frames: Frame[] = [];
  private readonly ws: WebSocket;
  private next = 0;
  private waiters: Array<{ test: (f: Frame) => boolean; resolve: (f: Frame) => void }> = [];
  readonly open: Promise<void>;

  constructor(url: string) {
    this.ws = new WebSocket(url, { headers: { origin: "http://127.0.0.1:5173" } });
    this.open = new Promise((resolve, reject) => {
      this.ws.once("open", () => resolve());
      this.ws.once("error", reject);
    });
    this.ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as Frame;
      expect(schemaIssues(frame, "#"), JSON.stringify(frame).slice(0, 200)).toEqual([]);
      this.frames.push(frame);
      this.waiters = this.waiters.filter((w) => {
        if (!w.test(frame)) return true;
        w.resolve(frame);
        return false;
      });
    });
  }

  /** the first frame (already received or still to come) that passes `test` */
  seen(test: (f: Frame) => boolean, what: string): Promise<Frame> {
    const found = this.frames.find(test);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), WAIT_MS);
      this.waiters.push({
        test,
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f);
        },
      });
    });
  }

  /** A request whose params the schema defines under `paramsDef` must validate before it is sent. */
  async call(method: string, params: Json, paramsDef?: string): Promise<Frame> {
    if (paramsDef) expect(schemaIssues(params, paramsDef), `${method} params`).toEqual([]);
    const id = `c${++this.next}`;
    const frame = { type: "req", id, method, params };
    expect(schemaIssues(frame, "RequestFrame")).toEqual([]);
    this.ws.send(JSON.stringify(frame));
    const res = await this.seen((f) => f.type === "res" && f.id === id, `${method} response`);
    if (!res.ok) expect(schemaIssues(res.error, "ErrorShape")).toEqual([]);
    return res;
  }

  close(): void {
    this.ws.close();
  }
}

/** An Ed25519 device key as the schema's ConnectParams.device describes it: raw 32-byte key, id = its hex SHA-256. */
function deviceKey() {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const raw = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
  return {
    id: createHash("sha256").update(raw).digest("hex"),
    publicKey: Buffer.from(raw).toString("base64url"),
    sign: (text: string) => sign(null, Buffer.from(text, "utf8"), privateKey).toString("base64url"),
  };
}

describe("an operator client written from the published schema", () => {
  it("connects with a v2 signature, follows a session, chats, patches the model, resets and reads the history", async () => {
    const requests: Array<{ model: string; thinking?: string }> = [];
    const provider = new TestProvider((req) => {
      requests.push({ model: req.model, thinking: req.thinking });
      const content = [...req.messages].reverse().find((m) => m.role === "user")?.content ?? "";
      const last =
        typeof content === "string" ? content : content.map((p) => (p.type === "text" ? p.text : "")).join("");
      // the second message makes the model read a file first, so the history has a tool call and its result
      if (last === "again" && !req.messages.some((m) => m.role === "toolResult")) {
        return { toolCalls: [{ id: "call_1", name: "read", arguments: { path: "notes.txt" } }] };
      }
      return { before: [`${req.model} says: `, "reply to ", last] };
    });
    const g = await startTestGateway({ provider, gateway: { token: "shared-secret", chatDeltaIntervalMs: 1 } });
    const client = new SchemaClient(g.url);
    await client.open;

    // connect: challenge → connect with a v2 device signature (no platform or device family in the payload)
    const challenge = await client.seen((f) => f.event === "connect.challenge", "challenge");
    const nonce = String(challenge.payload?.nonce);
    const device = deviceKey();
    const signedAt = Date.now();
    const scopes = ["operator.admin", "operator.read", "operator.write"];
    const connectParams = {
      minProtocol: 4,
      maxProtocol: 4,
      client: { id: "openclaw-control-ui", version: "2026.9.1", platform: "web", mode: "webchat" },
      role: "operator",
      scopes,
      auth: { token: "shared-secret", password: "shared-secret" },
      device: {
        id: device.id,
        publicKey: device.publicKey,
        signature: device.sign(
          [
            "v2",
            device.id,
            "openclaw-control-ui",
            "webchat",
            "operator",
            scopes.join(","),
            signedAt,
            "shared-secret",
            nonce,
          ].join("|"),
        ),
        signedAt,
        nonce,
      },
    };
    const hello = await client.call("connect", connectParams, "ConnectParams");
    expect(hello.ok, JSON.stringify(hello.error)).toBe(true);
    expect(schemaIssues(hello.payload, "HelloOk")).toEqual([]);
    const features = hello.payload?.features as { methods: string[]; events: string[] };
    for (const m of ["sessions.subscribe", "sessions.messages.subscribe", "sessions.create", "sessions.patch"]) {
      expect(features.methods).toContain(m);
    }
    expect(features.events).toEqual(expect.arrayContaining(["chat", "sessions.changed", "session.message"]));

    // subscribe to sessions, create one, and follow its messages
    expect((await client.call("sessions.subscribe", {})).ok).toBe(true);
    const created = await client.call("sessions.create", { key: "desk", label: "Desk" }, "SessionsCreateParams");
    expect(schemaIssues(created.payload, "SessionsCreateResult")).toEqual([]);
    const key = String(created.payload?.key);
    expect(key).toBe("agent:main:desk");
    await client.seen((f) => f.event === "sessions.changed" && f.payload?.reason === "created", "created");
    const follow = await client.call("sessions.messages.subscribe", { key }, "SessionsMessagesSubscribeParams");
    expect(follow.ok).toBe(true);

    // send: chat deltas and a final, and session.message for the user's and the assistant's rows
    // a small picture rides along (ChatSendParams.attachments: base64 content)
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#c00" } })
      .png()
      .toBuffer();
    const picture = { type: "image", mimeType: "image/png", fileName: "dot.png", content: png.toString("base64") };
    const send1 = {
      sessionKey: key,
      message: "hello",
      idempotencyKey: "oc-1",
      deliver: false,
      timeoutMs: 30000,
      attachments: [picture],
    };
    const sent = await client.call("chat.send", send1, "ChatSendParams");
    expect(sent.ok).toBe(true);
    const final1 = await client.seen(
      (f) => f.event === "chat" && f.payload?.runId === "oc-1" && f.payload?.state === "final",
      "final 1",
    );
    const chat1 = client.frames.filter((f) => f.event === "chat" && f.payload?.runId === "oc-1");
    expect(chat1.some((f) => f.payload?.state === "delta")).toBe(true);
    for (const f of chat1) expect(schemaIssues(f.payload, "ChatEvent")).toEqual([]);
    expect(JSON.stringify(final1.payload?.message)).toContain("m says: reply to hello");
    const reply1 = await client.seen(
      (f) => f.event === "session.message" && (f.payload?.message as Json)?.role === "assistant",
      "assistant session.message",
    );
    expect(reply1.payload).toMatchObject({ key, message: { role: "assistant" } });
    const asked = client.frames.find(
      (f) => f.event === "session.message" && (f.payload?.message as Json)?.role === "user",
    );
    expect((asked?.payload?.message as Json)?.content).toEqual([
      { type: "text", text: "hello" },
      expect.objectContaining({ type: "image", mimeType: "image/png", data: expect.any(String) }),
    ]);

    // patch the model: the next run uses it
    const patch = { key, model: "t/other", thinkingLevel: "low", verboseLevel: "on" };
    const patched = await client.call("sessions.patch", patch, "SessionsPatchParams");
    expect(patched.payload?.session).toMatchObject({ model: "t/other", thinkingLevel: "low", verboseLevel: "on" });
    expect(schemaIssues(patched.payload?.session, "SessionRow")).toEqual([]);
    await client.seen((f) => f.event === "sessions.changed" && f.payload?.reason === "patched", "patched");
    await client.call("chat.send", { sessionKey: key, message: "again", idempotencyKey: "oc-2" }, "ChatSendParams");
    const final2 = await client.seen(
      (f) => f.event === "chat" && f.payload?.runId === "oc-2" && f.payload?.state === "final",
      "final 2",
    );
    expect(JSON.stringify(final2.payload?.message)).toContain("other says: reply to again");
    // the patch reached the run: its model and thinking level, and verbose mode's tool summary in the result
    expect(requests.at(0)).toEqual({ model: "m", thinking: "off" });
    expect(requests.at(-1)).toEqual({ model: "other", thinking: "low" });
    expect(JSON.stringify((await g.gw.service.rt.store.getRun("oc-2"))?.result)).toContain("read: notes.txt");

    // the history, in the schema's message shape, before and after a reset
    const history = await client.call("chat.history", { sessionKey: key, limit: 50 }, "ChatHistoryParams");
    const messages = history.payload?.messages as Json[];
    expect(messages.map((m) => [m.role, typeof m.timestamp])).toEqual([
      ["user", "number"],
      ["assistant", "number"],
      ["user", "number"],
      ["assistant", "number"],
      ["toolResult", "number"],
      ["assistant", "number"],
    ]);
    // a tool call and its result render from the message itself
    // the picture is in the history with its bytes, so the client can show it
    expect((messages[0].content as Json[])[1]).toMatchObject({ type: "image", data: expect.any(String) });
    expect(messages[3].content).toEqual([
      { type: "toolCall", id: "call_1", name: "read", arguments: { path: "notes.txt" } },
    ]);
    expect(messages[4]).toMatchObject({ toolCallId: "call_1", toolName: "read", isError: true });
    expect(messages[5].content).toEqual([{ type: "text", text: "other says: reply to again" }]);
    const reset = await client.call("sessions.reset", { key, reason: "new" }, "SessionsResetParams");
    expect(reset.ok).toBe(true);
    await client.seen((f) => f.event === "sessions.changed" && f.payload?.reason === "reset", "reset");
    const after = await client.call("chat.history", { sessionKey: key }, "ChatHistoryParams");
    expect(after.payload?.messages).toEqual([]);

    // every sessions.changed carried the session as a SessionRow
    for (const f of client.frames.filter((x) => x.event === "sessions.changed")) {
      if (f.payload?.session) expect(schemaIssues(f.payload.session, "SessionRow")).toEqual([]);
    }
    client.close();
    await g.gw.close();
  });
});
