/*
 * Issue 13 acceptance: a client that disconnects mid-run and re-attaches with `afterSeq` gets every event exactly
 * once. A real `loopgate gateway` child (dist/, `npm run build` first), the OpenAI Chat Completions provider against
 * the fake model server streaming a long reply slowly, real WebSocket clients (dist/client). A second client
 * watches the whole run; the re-attaching client's union must equal it, and equal what the gateway stored.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { followRun, GatewayClient } from "../../dist/client/index.js";
import type { AgentEventPayload } from "../../src/protocol/payloads.js";
import { type FakeModelServer, startFakeModelServer } from "../../src/testing/fake-model-server.js";
import { type ChildGateway, startChildGateway } from "../fixtures/gateway/child-gateway.js";

const WAIT_MS = 20_000;
let server: FakeModelServer;
let child: ChildGateway | undefined;

beforeAll(async () => {
  server = await startFakeModelServer({ captureRequests: false });
});
afterAll(() => server.close());
afterEach(() => {
  child?.stop();
  child = undefined;
});

function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (check()) return resolve();
      if (Date.now() > deadline) return reject(new Error(`timed out waiting until ${what}`));
      setTimeout(poll, 10);
    };
    poll();
  });
}

const isEnd = (ev: AgentEventPayload) =>
  ev.stream === "lifecycle" && (ev.data.phase === "end" || ev.data.phase === "error");

describe("re-attaching to a run over a real gateway process", () => {
  it("a client that disconnects mid-run and reconnects with afterSeq gets every event exactly once", async () => {
    child = await startChildGateway(
      // small pages, so the replay after the reconnect is paged
      { maxPageBytes: 2048 },
      {
        config: {
          agents: { defaults: { model: { primary: "fake/m" } } },
          models: {
            providers: {
              fake: { api: "openai-completions", baseUrl: server.baseUrl, apiKey: "sk-test", models: [{ id: "m" }] },
            },
          },
        },
      },
    );
    const reply = Array.from({ length: 300 }, (_, i) => `word${i} `);
    server.enqueue({ text: reply, chunkDelayMs: 10 });
    const runId = "reattach-1";

    const watcher = await GatewayClient.connect({ url: child.url, scopes: ["operator.read"] });
    const watched: AgentEventPayload[] = [];
    watcher.on("agent", (p) => {
      if ((p as AgentEventPayload).runId === runId) watched.push(p as AgentEventPayload);
    });

    const first = await GatewayClient.connect({ url: child.url });
    const got: AgentEventPayload[] = [];
    const call = first.agent(
      { message: "tell a long story", idempotencyKey: runId },
      { onEvent: (ev) => got.push(ev) },
    );
    call.catch(() => {}); // the connection goes away before the final
    await until(() => got.length >= 20, "20 events on the first connection");
    await first.close();
    const lastSeen = got.at(-1)!.seq;

    // the run goes on while the client is away
    await until(() => watched.length >= lastSeen + 20, "20 more events while the client is away");
    const again = await GatewayClient.connect({ url: child.url });
    const resumed: AgentEventPayload[] = [];
    const follow = await followRun(again, runId, { afterSeq: lastSeen, onEvent: (ev) => resumed.push(ev) });
    const { status } = await follow.done;
    expect(status).toBe("ok");
    await until(() => watched.some(isEnd), "the watcher's end");

    const union = [...got, ...resumed];
    expect(union.map((e) => e.seq)).toEqual(Array.from({ length: union.length }, (_, i) => i + 1));
    expect(union).toEqual(watched);
    const text = union.flatMap((e) => (e.stream === "assistant" ? [e.data.delta] : [])).join("");
    expect(text).toBe(reply.join(""));
    expect(follow.lastSeq).toBe(watched.at(-1)!.seq);

    // and the gateway stored exactly those events: a replay from 0 (paged) on a fresh connection
    const later = await GatewayClient.connect({ url: child.url });
    const replayed: AgentEventPayload[] = [];
    await (await followRun(later, runId, { onEvent: (ev) => replayed.push(ev) })).done;
    expect(replayed).toEqual(watched);
    for (const c of [watcher, again, later]) await c.close();
  });
});
