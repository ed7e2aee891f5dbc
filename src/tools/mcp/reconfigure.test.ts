import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../infra/clock.js";
import { McpToolSource } from "./source.js";
import { FIXTURE_SERVER, isAlive, mcpServers, waitFor } from "./test-servers.test-support.js";

/*
 * A reloaded mcp.servers (SPEC 26) over real stdio children: changed servers are reconnected, new ones connected,
 * removed ones closed, and the unchanged ones keep their connection (the same child).
 */

const sources: McpToolSource[] = [];
afterEach(async () => {
  await Promise.all(sources.splice(0).map((s) => s.close()));
});

const fixture = (extra: Record<string, unknown> = {}) => ({
  command: process.execPath,
  args: [FIXTURE_SERVER],
  ...extra,
});

async function allReady(s: McpToolSource, names: string[]): Promise<void> {
  await waitFor(`${names.join(", ")} ready`, () =>
    names.every((n) => s.status().find((x) => x.server === n)?.state === "ready"),
  );
}

describe("McpToolSource.reconfigure", () => {
  it("a changed server reconnects, a new one connects, a removed one's child exits, an unchanged one keeps its child", async () => {
    const s = new McpToolSource(mcpServers({ keep: fixture(), change: fixture(), drop: fixture() }), {
      clock: systemClock,
    });
    sources.push(s);
    s.start();
    await allReady(s, ["keep", "change", "drop"]);
    const before = new Set(s.pids());
    expect(before.size).toBe(3);

    const touched = await s.reconfigure(
      mcpServers({ keep: fixture(), change: fixture({ env: { FIXTURE_MODE: "changed" } }), add: fixture() }),
    );
    expect(touched.sort()).toEqual(["add", "change", "drop"]);
    await allReady(s, ["keep", "change", "add"]);
    expect(
      s
        .status()
        .map((x) => x.server)
        .sort(),
    ).toEqual(["add", "change", "keep"]);
    const after = new Set(s.pids());
    // one child survived (keep's), two are new (change's and add's), and the two replaced ones have exited
    const kept = [...before].filter((pid) => after.has(pid));
    // children are listed in the order their servers were connected: keep's was first, and still is
    expect(kept).toEqual([s.pids()[0]]);
    expect(kept).toEqual([[...before][0]]);
    expect([...after].filter((pid) => !before.has(pid))).toHaveLength(2);
    for (const pid of before) if (!after.has(pid)) expect(isAlive(pid)).toBe(false);
    expect(s.tools().map((t) => t.name)).toEqual(expect.arrayContaining(["add__fail", "change__fail", "keep__fail"]));
    expect(s.tools().some((t) => t.name.startsWith("drop__"))).toBe(false);
    // nothing changed: nothing is touched, no child restarted
    expect(
      await s.reconfigure(
        mcpServers({ keep: fixture(), change: fixture({ env: { FIXTURE_MODE: "changed" } }), add: fixture() }),
      ),
    ).toEqual([]);
    expect(new Set(s.pids())).toEqual(after);
  });
});
