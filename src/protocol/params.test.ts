import { describe, expect, it } from "vitest";
import { chatHistoryParamsSchema, modelsListParamsSchema } from "./params.js";

describe("params OpenClaw's own clients send", () => {
  it("models.list takes the sessionKey OpenClaw's Control UI sends (regression: its model picker got invalid_params)", () => {
    const sent = { view: "configured", sessionKey: "agent:main:main", agentId: "main" };
    expect(modelsListParamsSchema.safeParse(sent)).toMatchObject({
      success: true,
      data: { view: "configured", agentId: "main" },
    });
  });

  it("chat.history takes the maxBytes OpenClaw's Control UI sends (regression: its chat view showed invalid_params)", () => {
    const sent = { sessionKey: "agent:main:main", agentId: "main", limit: 80, maxBytes: 262144 };
    expect(chatHistoryParamsSchema.safeParse(sent)).toMatchObject({ success: true, data: { maxBytes: 262144 } });
  });

  it("models.list still refuses a field no client sends, naming it", () => {
    const r = modelsListParamsSchema.safeParse({ view: "configured", bogus: 1 });
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toContain("bogus");
  });
});
