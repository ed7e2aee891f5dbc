import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { isSummaryRequest, type RunHarness, startRunHarness } from "../agent/run/run-harness.test-support.js";

/*
 * Every model call of a run goes through spend control, also the ones the run makes for itself: a compaction
 * summary is priced, recorded and checked like any other call. A real runtime (the node an embedded run gets), the
 * real Chat Completions provider against the fake model server, the real SQLite ledger.
 */

let h: RunHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function harness(limits: Record<string, unknown>) {
  return startRunHarness({
    role: "embedded",
    respond: (req) =>
      isSummaryRequest(req)
        ? { text: "Short summary.", usage: { input: 1000, output: 50 } }
        : { text: "ok ".repeat(200), usage: { input: 100, output: 200 } },
    config: (baseUrl) => ({
      agents: { defaults: { model: { primary: "fake/m" }, compaction: { keepRecentTokens: 100 } } },
      models: {
        providers: {
          fake: {
            api: "openai-completions",
            baseUrl,
            apiKey: "x",
            // $10 per million input tokens, $30 per million output
            models: [{ id: "m", maxTokens: 256, cost: { input: 10, output: 30 } }],
          },
        },
      },
      limits,
    }),
  });
}

function ledger(run: RunHarness): Array<{ run_id: string; input_tokens: number; cost_usd: number }> {
  const db = new Database(run.store.file, { readonly: true });
  const rows = db.prepare("SELECT run_id, input_tokens, cost_usd FROM cost_ledger ORDER BY seq").all();
  db.close();
  return rows as Array<{ run_id: string; input_tokens: number; cost_usd: number }>;
}

describe("metered compaction", () => {
  it("a /compact summary call is a ledger row of its run, priced with the model that served it", async () => {
    h = await harness({});
    for (const q of ["one", "two", "three"]) await h.send(q);
    const final = await h.send("/compact");
    expect(final.status).toBe("ok");
    expect(h.requests.filter(isSummaryRequest)).toHaveLength(1);
    await h.rt.spend?.ledger.flush();
    const rows = ledger(h);
    expect(rows).toHaveLength(4);
    // 1000 in at $10/M + 50 out at $30/M
    expect(rows[3]).toEqual({ run_id: final.runId, input_tokens: 1000, cost_usd: 0.0115 });
  });

  it("a summary call is refused like any other when the day's budget is used up: it never reaches the model", async () => {
    h = await harness({ budgets: [{ scope: "agent", window: "day", maxUsd: 0.002 }] });
    await h.send("one"); // $0.007: crosses the budget
    const before = h.requests.length;
    const final = await h.send("/compact");
    expect(h.requests.length).toBe(before);
    expect(JSON.stringify(final)).toContain("budget limits.budgets.0 (day) exhausted");
  });
});
