import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../config/load.js";
import { cleanUpHarnesses, harness, T0 } from "./scheduler.test-support.js";

afterEach(cleanUpHarnesses);

describe("cron jobs from a reloaded config (SPEC 26)", () => {
  it("a job removed from cron.jobs stops firing, a new one fires on its schedule, an unchanged one keeps its rhythm", async () => {
    const keep = { id: "keep", schedule: "*/2 * * * * *", message: "k" };
    const h = harness({ jobs: [keep, { id: "drop", schedule: "*/3 * * * * *", message: "d" }] });
    await h.scheduler.start();
    await h.advance(3);
    const cron = parseConfig({
      agents: { defaults: { model: { primary: "a/m" } } },
      cron: { jobs: [keep, { id: "new", schedule: "*/5 * * * * *", message: "n" }] },
    }).cron;
    h.scheduler.reconfigure(cron);
    await h.advance(7);
    await Promise.all(h.accepted.map((a) => h.service.final(a.runId)));
    await h.settle();
    expect((await h.scheduler.list()).map((j) => j.id).sort()).toEqual(["keep", "new"]);
    expect((await h.runs("keep")).map((r) => r.scheduledAt - T0)).toEqual([2000, 4000, 6000, 8000, 10000]);
    expect((await h.runs("new")).map((r) => r.scheduledAt - T0)).toEqual([5000, 10000]);
    // "drop" fired at 3 s, before the reload, and never after it
    expect(h.accepted.filter((a) => a.sessionKey === "cron:drop")).toHaveLength(1);
  });
});
