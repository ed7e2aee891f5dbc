/*
 * Issue 33 #5: a Postgres node's `health` says degraded, with the reason, when its store is unreachable or its
 * leases lapsed, and `/health` answers 503 so a load balancer takes it out; it is well again once the store answers.
 * The gateway reaches the real server through a loopback TCP relay the test can cut (close it and drop every
 * connection: new connections are refused, as when the database host is down). Waits are bounded polls.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../../src/testing/postgres-schema.js";
import {
  connectedPeer,
  type RawPeer,
  removeTempDirs,
  startTestGateway,
  type TestGateway,
} from "../fixtures/gateway/harness.js";

/** A TCP relay on loopback to the Postgres server; `cut()` refuses and drops everything, `restore()` relays again. */
class Relay {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;
  constructor(
    private readonly host: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", resolve);
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  async restore(): Promise<void> {
    if (!this.server) await this.start();
  }
}

const until = async <T>(probe: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> => {
  let last: T | undefined;
  for (let i = 0; i < 300; i++) {
    last = await probe();
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
};

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("health of a node on Postgres", () => {
  let ts: TestSchema;
  let relay: Relay;
  let node: TestGateway;
  let peer: RawPeer;

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    const target = new URL(testPostgresUrl as string);
    relay = new Relay(target.hostname, Number(target.port || 5432));
    await relay.start();
    const viaRelay = new URL(testPostgresUrl as string);
    viaRelay.hostname = "127.0.0.1";
    viaRelay.port = String(relay.port);
    node = await startTestGateway({
      config: {
        storage: {
          backend: "postgres",
          postgres: { url: viaRelay.toString(), schema: ts.schema, leaseMs: 900, statementTimeoutMs: 2000 },
        },
      },
    });
    peer = await connectedPeer(node.url, { scopes: ["operator.read"] });
  });
  afterAll(async () => {
    peer?.close();
    await relay?.restore();
    await node?.gw.close();
    await relay?.cut();
    await ts?.drop();
    removeTempDirs();
  });

  const health = async () => (await peer.call("health")).payload as Record<string, unknown>;
  const httpHealth = async () => {
    const res = await fetch(`http://127.0.0.1:${node.gw.port}/health`);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it("store unreachable: degraded with the reason, /health 503, leases lost after a lease; well again once it answers", async () => {
    expect(await health()).toMatchObject({ ok: true });
    expect((await httpHealth()).status).toBe(200);

    await relay.cut();
    const down = await until(health, (h) => h.ok === false, "health to say degraded");
    expect(down.degraded).toMatchObject({ reason: expect.stringMatching(/^(store unreachable|leases lost)$/) });
    // the reason is the driver's error, never the store's URL
    expect(String((down.degraded as { message: string }).message)).not.toContain("postgres://");
    const http = await httpHealth();
    expect(http.status).toBe(503);
    expect(http.body).toMatchObject({ ok: false });

    // a whole lease without a heartbeat: the node's leases are gone, and it says so
    const lapsed = await until(
      health,
      (h) => (h.degraded as { reason?: string } | undefined)?.reason === "leases lost",
      "health to say the leases were lost",
    );
    expect(String((lapsed.degraded as { message: string }).message)).toContain("storage.postgres.leaseMs is 900");

    await relay.restore();
    const back = await until(health, (h) => h.ok === true, "health to be well again");
    expect(back.degraded).toBeUndefined();
    expect((await httpHealth()).status).toBe(200);
  }, 60_000);
});
