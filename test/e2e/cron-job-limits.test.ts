/*
 * Issue 25 item 9, over a real WebSocket: `cron.add` with a 2 MB schedule (or any over-long field) is refused with
 * `invalid_params` naming the param and the limit, without echoing the value back; the gateway keeps serving and
 * the job list stays as it was.
 */
import { describe, expect, it } from "vitest";
import { connectedPeer, useTestGateways } from "../fixtures/gateway/harness.js";

const gateway = useTestGateways();

describe("cron.add field lengths", () => {
  it("a-2-MB-cron-schedule-is-refused-naming-params-schedule", async () => {
    const g = await gateway();
    const peer = await connectedPeer(g.url);
    const huge = `${"1,".repeat(1024 * 1024)}2 * * * *`;
    const refused = await peer.call("cron.add", { id: "big", schedule: huge, message: "m" });
    const answer = refused.ok ? "accepted" : JSON.stringify(refused.error).slice(0, 300);
    console.log(`cron.add with a ${huge.length}-char schedule: ${answer}`);
    expect(refused.ok).toBe(false);
    expect(refused.error?.code).toBe("invalid_params");
    expect(refused.error?.message).toBe(`params.schedule: expected at most 256 characters, got ${huge.length}`);

    const long = await peer.call("cron.add", {
      id: "long",
      schedule: "0 9 * * *",
      message: "m".repeat(40_000),
      model: `t/${"m".repeat(300)}`,
    });
    expect(long.error?.code).toBe("invalid_params");
    expect(long.error?.message).toContain("params.message: expected at most 32768 characters, got 40000");
    expect(long.error?.message).toContain("params.model: expected at most 256 characters, got 302");

    const ok = await peer.call("cron.add", { id: "fine", schedule: "0 9 * * *", message: "m" });
    expect(ok.ok, JSON.stringify(ok.error)).toBe(true);
    const list = await peer.call("cron.list", {});
    expect(((list.payload?.jobs ?? []) as Array<{ id: string }>).map((j) => j.id)).toEqual(["fine"]);
    peer.close();
  });
});
