import { describe, expect, it } from "vitest";
import type { Clock } from "../../infra/clock.js";
import { McpServerConnection, type McpServerStatus, reconnectDelay } from "./connection.js";
import { mcpServers, waitFor } from "./test-servers.test-support.js";

/** A clock whose timers fire only when the test says so; it records every delay asked for. */
function manualClock() {
  const timers = new Map<number, { fn: () => void; ms: number }>();
  let next = 0;
  const clock: Clock = {
    now: () => 0,
    setTimeout: (fn, ms) => {
      timers.set(++next, { fn, ms });
      return next;
    },
    clearTimeout: (handle) => void timers.delete(handle as number),
  };
  return {
    clock,
    pending: () => [...timers.values()],
    /** fires the one pending timer (the retry), after checking it is the only one */
    fire: () => {
      const [entry] = [...timers.entries()];
      if (!entry || timers.size !== 1) throw new Error(`expected one pending timer, have ${timers.size}`);
      timers.delete(entry[0]);
      entry[1].fn();
    },
  };
}

describe("reconnecting", () => {
  it("delays double from baseMs up to maxMs, half of each fixed and half jittered", () => {
    const backoff = { baseMs: 100, maxMs: 800 };
    expect([0, 1, 2, 3, 4, 10].map((a) => reconnectDelay(a, backoff, 0))).toEqual([50, 100, 200, 400, 400, 400]);
    expect([0, 1, 2, 3, 4].map((a) => reconnectDelay(a, backoff, 0.999999))).toEqual([100, 200, 400, 800, 800]);
    expect(reconnectDelay(1000, backoff, 0.5)).toBe(600);
  });

  it("a server that keeps failing is retried on that schedule, reported failed once, with its newest error", async () => {
    const manual = manualClock();
    const changes: McpServerStatus[] = [];
    const config = mcpServers({ broken: { command: "/nonexistent/mcp-server" } }).broken;
    if (!config) throw new Error("no config");
    const connection = new McpServerConnection("broken", config, {
      clock: manual.clock,
      random: () => 0.5,
      backoff: { baseMs: 100, maxMs: 800 },
      onStateChange: (s) => changes.push(s),
    });
    connection.start();
    const delays: number[] = [];
    for (let attempt = 0; attempt < 5; attempt++) {
      // each attempt fails at spawn; then only its retry timer is pending
      await waitFor("the retry timer", () => manual.pending().length === 1 && manual.pending()[0]?.ms !== 30000);
      delays.push(manual.pending()[0]?.ms as number);
      manual.fire();
    }
    console.log(`retry delays: ${delays.join(", ")} ms`);
    expect(delays).toEqual([75, 150, 300, 600, 600]);
    expect(changes.map((c) => c.state)).toEqual(["connecting", "failed"]);
    expect(connection.status()).toMatchObject({ state: "failed", lastError: expect.stringMatching(/ENOENT/) });
    await connection.close();
    expect(manual.pending()).toEqual([]);
    expect(connection.status().state).toBe("closed");
  });
});
