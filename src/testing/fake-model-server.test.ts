import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeModelServer, startFakeModelServer } from "./fake-model-server.js";

let server: FakeModelServer;

beforeAll(async () => {
  server = await startFakeModelServer({
    respond: (req) => ({ text: `you asked for ${String(req.body.model)}` }),
  });
});
afterAll(() => server.close());

function post(path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`http://127.0.0.1:${server.port}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
}

describe("fake model server", () => {
  it("streams Chat Completions as data-only SSE chunks ending in [DONE], with usage only when asked", async () => {
    server.enqueue({ text: ["a", "b"], usage: { input: 3, output: 2 } });
    const withUsage = await (
      await post("/v1/chat/completions", { model: "m", stream: true, stream_options: { include_usage: true } })
    ).text();
    const events = withUsage.split("\n\n").filter(Boolean);
    expect(events.every((e) => e.startsWith("data: "))).toBe(true);
    expect(events.at(-1)).toBe("data: [DONE]");
    const usageChunk = JSON.parse(events.at(-2)!.slice(6));
    expect(usageChunk).toMatchObject({
      choices: [],
      usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
    });

    server.enqueue({ text: "x" });
    const withoutUsage = await (await post("/v1/chat/completions", { model: "m", stream: true })).text();
    expect(withoutUsage).not.toContain('"usage"');
  });

  it("names each Responses and Anthropic event in an event: line matching its type", async () => {
    for (const path of ["/v1/responses", "/v1/messages"]) {
      const text = await (await post(path, { model: "m", stream: true })).text();
      for (const block of text.split("\n\n").filter(Boolean)) {
        const [eventLine, dataLine] = block.split("\n");
        expect(eventLine).toMatch(/^event: /);
        expect(JSON.parse(dataLine.slice(6)).type).toBe(eventLine.slice(7));
      }
    }
  });

  it("answers queued turns first, then falls back to respond(), and records every request", async () => {
    const before = server.requests.length;
    server.enqueue({ text: "queued" });
    const first = await (await post("/v1/chat/completions", { model: "first", stream: true })).text();
    const second = await (await post("/v1/chat/completions", { model: "second", stream: true })).text();
    expect(first).toContain('"content":"queued"');
    expect(second).toContain('"content":"you asked for second"');
    expect(server.requests.slice(before).map((r) => [r.path, r.body.model])).toEqual([
      ["/v1/chat/completions", "first"],
      ["/v1/chat/completions", "second"],
    ]);
  });

  it("answers an unknown path with 404 and a JSON error saying so", async () => {
    const res = await post("/v1/embeddings", { model: "m" });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { message: expect.stringContaining("/v1/embeddings") } });
  });

  it("refuses non-streaming requests with a clear 400", async () => {
    const res = await post("/v1/messages", { model: "m", max_tokens: 10, messages: [] });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain("stream: true");
  });

  it("sends the scripted HTTP error with its body and headers", async () => {
    server.enqueue({
      error: { status: 429, body: { error: { message: "slow down" } }, headers: { "retry-after": "7" } },
    });
    const res = await post("/v1/responses", { model: "m", stream: true });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("7");
    expect(await res.json()).toEqual({ error: { message: "slow down" } });
  });

  it("keeps serving after a client hangs up in the middle of a slow stream", async () => {
    server.enqueue({ text: Array.from({ length: 500 }, () => "tick "), chunkDelayMs: 5 });
    const controller = new AbortController();
    const res = await post("/v1/chat/completions", { model: "m", stream: true }, controller.signal);
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    await reader.read().catch(() => undefined);

    server.enqueue({ text: "still here" });
    const next = await (await post("/v1/chat/completions", { model: "m", stream: true })).text();
    expect(next).toContain("still here");
  });

  it("keeps no request history when captureRequests is false", async () => {
    const quiet = await startFakeModelServer({ captureRequests: false });
    try {
      const res = await fetch(`${quiet.baseUrl}/chat/completions`, {
        method: "POST",
        body: JSON.stringify({ model: "m", stream: true }),
      });
      expect(await res.text()).toContain("data: [DONE]");
      expect(quiet.requests).toEqual([]);
    } finally {
      await quiet.close();
    }
  });
});
