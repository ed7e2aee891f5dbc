/*
 * Issue 33 #4: what operators answer and switch at run time holds on every node of a fleet. Two PostgresStores on one
 * schema are two nodes; each node's reader trusts its last read for a second (ManualClock), then reads again. A
 * node's state-dir files from before are imported once, nothing lost.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openPostgresStore, type PostgresStore } from "../storage/postgres/store.js";
import { ManualClock } from "../testing/manual-clock.js";
import { createTestSchema, type TestSchema, testPostgresUrl } from "../testing/postgres-schema.js";
import { SHARED_SETTINGS_CACHE_MS } from "./shared-settings.js";
import { StoredAllowAlways } from "./stored-allow-always.js";
import { StoredEnabledSwitches } from "./stored-switches.js";

// Skipped without LOOPGATE_TEST_POSTGRES_URL: these cases need a real PostgreSQL server (.ci/run sets it).
describe.skipIf(!testPostgresUrl)("operator settings shared by the nodes of a fleet", () => {
  let ts: TestSchema;
  let a: PostgresStore;
  let b: PostgresStore;
  const dirs: string[] = [];
  const stateDir = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "loopgate-shared-"));
    dirs.push(dir);
    return dir;
  };

  beforeAll(async () => {
    ts = await createTestSchema(testPostgresUrl as string);
    a = await openPostgresStore({ ...ts.options, poolMax: 2 });
    b = await openPostgresStore({ ...ts.options, poolMax: 2 });
  });
  afterEach(async () => {
    await a.pool.query("DELETE FROM operator_settings");
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await ts?.drop();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it("allow-always answered on node A holds on node B within a second, in the approver's sessions only; patterns too", async () => {
    const clock = new ManualClock(10_000);
    const onA = new StoredAllowAlways(a, clock, stateDir());
    const onB = new StoredAllowAlways(b, clock, stateDir());
    await onB.refresh();
    expect(onB.has("main", "make  deploy", "agent:main:t1")).toBe(false);

    await onA.refresh();
    onA.add("main", "make deploy", clock.now(), ["agent:main:t1*"]);
    await onA.setAllowlist(["git status"]);
    await onA.settled(); // the answer's write is not awaited by the run that got it
    await onB.refresh();
    expect(onB.has("main", "make deploy", "agent:main:t1")).toBe(false); // B read less than a second ago
    clock.advance(SHARED_SETTINGS_CACHE_MS);
    await onB.refresh();
    expect(onB.has("main", "make   deploy", "agent:main:t1-x")).toBe(true);
    expect(onB.has("main", "make deploy", "agent:main:other")).toBe(false);
    expect(onB.has("ops", "make deploy", "agent:main:t1")).toBe(false);
    expect(onB.allowlist).toEqual(["git status"]);
    // the command is kept for people only, hashed for matching
    expect(JSON.stringify(onB.view())).toContain("make deploy");
  });

  it("a node's exec-approvals.json and enabled-overrides.json of before are imported once and set aside", async () => {
    const clock = new ManualClock(20_000);
    const dir = stateDir();
    fs.writeFileSync(
      path.join(dir, "exec-approvals.json"),
      JSON.stringify({
        version: 2,
        allowlist: ["ls *"],
        allowAlways: [{ agentId: "main", sha256: "ab".repeat(32), command: "old cmd", addedAtMs: 5 }],
      }),
    );
    fs.writeFileSync(
      path.join(dir, "enabled-overrides.json"),
      JSON.stringify({ version: 1, skills: { weather: { enabled: false } }, plugins: { greeter: { enabled: false } } }),
    );
    const approvals = new StoredAllowAlways(a, clock, dir);
    const switches = new StoredEnabledSwitches(a, clock, dir);
    await approvals.refresh();
    await switches.refresh();
    const left = fs.readdirSync(dir).sort();
    expect(left.some((f) => f === "exec-approvals.json" || f === "enabled-overrides.json")).toBe(false);
    expect(left.filter((f) => f.includes(".imported-"))).toHaveLength(2);

    // another node sees what was imported
    const otherApprovals = new StoredAllowAlways(b, clock, stateDir());
    const otherSwitches = new StoredEnabledSwitches(b, clock, stateDir());
    await otherApprovals.refresh();
    await otherSwitches.refresh();
    expect(otherApprovals.allowlist).toEqual(["ls *"]);
    expect(otherApprovals.view().allowAlways.map((e) => e.command)).toEqual(["old cmd"]);
    expect(otherSwitches.get("skills", "weather")).toBe(false);
    expect(otherSwitches.get("plugins", "greeter")).toBe(false);

    // a later start does not import again (the file is gone): switching back on sticks
    await otherSwitches.set("skills", "weather", true);
    const again = new StoredEnabledSwitches(a, clock, dir);
    await again.refresh();
    expect(again.get("skills", "weather")).toBe(true);
  });
});
