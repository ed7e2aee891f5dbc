import { describe, expect, it } from "vitest";
import { ClientAccess, STARTED_RUNS_KEPT } from "./access.js";
import type { Grant } from "./token-grants.js";

const everySession: Grant = { scopes: ["operator.write"], sessions: ["*"], sessionAllowed: () => true };

describe("ClientAccess: the runs a connection started", () => {
  it("a long-lived write-only connection remembers only its newest runs, not every run it ever started", () => {
    const access = new ClientAccess(["operator.write"], everySession);
    const total = STARTED_RUNS_KEPT + 500;
    for (let i = 0; i < total; i++) access.recordStarted(`run-${i}`, `s${i % 3}`);

    // the oldest fell out: no longer this client's to wait on or to abort
    expect(access.startedRun("run-0")).toBe(false);
    expect(access.startedRun("run-499")).toBe(false);
    expect(() => access.requireRunVisible("run-0", "s0")).toThrow(/not started by this client/);
    // the newest are still its own
    expect(access.startedRun("run-500")).toBe(true);
    expect(access.startedRun(`run-${total - 1}`)).toBe(true);
    expect(access.canSeeRun(`s${(total - 1) % 3}`, `run-${total - 1}`)).toBe(true);
    // chat.abort without a runId: the kept runs of that session, newest first
    const own = access.abortable("s0", undefined);
    expect(own).toHaveLength(
      Array.from({ length: STARTED_RUNS_KEPT }, (_, i) => i + 500).filter((i) => i % 3 === 0).length,
    );
    expect(own[0]).toBe(`run-${total - 1 - ((total - 1) % 3)}`);
  });

  it("an operator.read connection still sees a run it started long ago", () => {
    const access = new ClientAccess(["operator.write", "operator.read"], {
      ...everySession,
      scopes: ["operator.write", "operator.read"],
    });
    for (let i = 0; i <= STARTED_RUNS_KEPT; i++) access.recordStarted(`run-${i}`, "s");
    expect(access.startedRun("run-0")).toBe(false);
    expect(() => access.requireRunVisible("run-0", "s")).not.toThrow();
    expect(access.canSeeRun("s", "run-0")).toBe(true);
  });
});
