import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { Cadence } from "../infra/cadence.js";
import { ManualClock } from "../testing/manual-clock.js";
import { postStreamed } from "./http-stream.js";
import type { SseEvent } from "./sse.js";
import { MIXED, MIXED_EVENTS } from "./sse-fixture.test-support.js";

/** A real HTTP server on loopback; each test says how it answers. */
let servers: Server[] = [];
afterEach(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  servers = [];
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => handler(req, res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`;
}

const sseHead = { "content-type": "text/event-stream" };
const post = (url: string, signal = new AbortController().signal) =>
  postStreamed(url, { "content-type": "application/json" }, '{"stream":true}', signal);

/** the data of a batch the iterator handed on (undefined once it is done) */
const dataOf = (r: IteratorResult<SseEvent[]>) => (r.done ? undefined : r.value.map((e) => e.data));

async function allEvents(batches: AsyncIterable<SseEvent[]>): Promise<string[]> {
  const out: string[] = [];
  for await (const batch of batches) for (const e of batch) out.push(e.data);
  return out;
}

describe("postStreamed: one streamed POST over node:http", () => {
  it("sends the body with its length and reads the SSE events of a chunked answer in order", async () => {
    let got = "";
    const url = await serve((req, res) => {
      got = `${req.method} ${req.headers["content-length"]} ${req.headers["content-type"]}`;
      res.writeHead(200, sseHead);
      res.write("data: one\n\n");
      res.write("data: tw");
      res.end("o\n\ndata: three\n\n");
    });
    const response = await post(url);
    expect(response.status).toBe(200);
    expect(await allEvents(response.sseBatches())).toEqual(["one", "two", "three"]);
    expect(got).toBe("POST 15 application/json");
  });

  it("reads a body written 3 bytes at a time, split inside characters and CRLFs, as the events it carries", async () => {
    const body = Buffer.from(MIXED.replace(/(?<!\r)\n/g, "\r\n"), "utf8");
    const url = await serve((_req, res) => {
      res.writeHead(200, sseHead);
      let at = 0;
      const pump = () => {
        if (at >= body.length) {
          res.end();
          return;
        }
        res.write(body.subarray(at, at + 3));
        at += 3;
        setTimeout(pump, 1);
      };
      pump();
    });
    const events: SseEvent[] = [];
    for await (const batch of (await post(url)).sseBatches()) events.push(...batch);
    expect(events).toEqual(MIXED_EVENTS);
  });

  it("skips a byte order mark at the start of the body, even one split across writes", async () => {
    const withBom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from("data: x\n\n")]);
    const url = await serve((_req, res) => {
      res.writeHead(200, sseHead);
      res.write(withBom.subarray(0, 2), () => setTimeout(() => res.end(withBom.subarray(2)), 5));
    });
    expect(await allEvents((await post(url)).sseBatches())).toEqual(["x"]);
  });

  it("a gzip-encoded answer is decoded", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { ...sseHead, "content-encoding": "gzip" });
      res.end(gzipSync("data: packed\n\ndata: twice\n\n"));
    });
    expect(await allEvents((await post(url)).sseBatches())).toEqual(["packed", "twice"]);
  });

  it("a body cut off in the middle fails as a reset connection, never as a quiet end", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, sseHead);
      res.write("data: before the cut\n\n", () => setTimeout(() => res.socket?.destroy(), 20));
    });
    const response = await post(url);
    const seen: string[] = [];
    const reading = (async () => {
      for await (const batch of response.sseBatches()) for (const e of batch) seen.push(e.data);
    })();
    await expect(reading).rejects.toMatchObject({ code: "ECONNRESET" });
    expect(seen).toEqual(["before the cut"]);
  });

  it("leaving the loop early closes the connection (the rest of the answer is not read)", async () => {
    let closed!: () => void;
    const serverSawClose = new Promise<void>((r) => {
      closed = r;
    });
    const url = await serve((_req, res) => {
      res.writeHead(200, sseHead);
      res.write("data: first\n\n");
      res.on("close", closed);
    });
    for await (const batch of (await post(url)).sseBatches()) {
      expect(batch.map((e) => e.data)).toEqual(["first"]);
      break;
    }
    await serverSawClose;
  });

  it("an abort while the body streams rejects the reader", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, sseHead);
      res.write("data: started\n\n");
    });
    const controller = new AbortController();
    const response = await post(url, controller.signal);
    const it = response.sseBatches()[Symbol.asyncIterator]();
    expect(dataOf(await it.next())).toEqual(["started"]);
    const waiting = it.next();
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ name: "AbortError" });
  });

  it("an error answer's body and headers can be read as text", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "3" });
      res.end('{"error":{"message":"slow down"}}');
    });
    const response = await post(url);
    expect(response.status).toBe(429);
    expect(response.headers["retry-after"]).toBe("3");
    expect(await response.text()).toBe('{"error":{"message":"slow down"}}');
  });

  it("a refused connection rejects with the socket's code", async () => {
    const url = await serve(() => {});
    const port = new URL(url).port;
    await new Promise((r) => servers.pop()?.close(r));
    await expect(post(`http://127.0.0.1:${port}/v1`)).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });
});

describe("postStreamed on the stream beat", () => {
  it("hands the first events on at once and what follows within the same beat slot together at the next beat", async () => {
    const clock = new ManualClock(1_000); // slot 25 of 40 ms
    const beat = new Cadence(clock, 40).lane("run");
    let res!: ServerResponse;
    const url = await serve((_req, r) => {
      res = r;
      res.writeHead(200, sseHead);
      res.write("data: a\n\n");
    });
    const it = (await post(url)).sseBatches(beat)[Symbol.asyncIterator]();
    expect(dataOf(await it.next())).toEqual(["a"]);
    const next = it.next();
    await new Promise<void>((r) => res.write("data: b\n\n", () => r()));
    await new Promise<void>((r) => res.write("data: c\n\n", () => r()));
    // both reached the client (loopback), but the beat has not come: nothing is handed on yet
    const early = await Promise.race([next, new Promise((r) => setTimeout(() => r("held"), 100))]);
    expect(early).toBe("held");
    clock.advance(40);
    expect(dataOf(await next)).toEqual(["b", "c"]);
    // the end of the body is never held for a beat
    res.end();
    expect((await it.next()).done).toBe(true);
  });
});
