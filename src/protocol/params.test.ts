import { describe, expect, it } from "vitest";
import type { z } from "zod";
import {
  agentParamsSchema,
  agentWaitParamsSchema,
  chatHistoryParamsSchema,
  chatSendParamsSchema,
  modelsListParamsSchema,
  parseParams,
  sessionsCreateParamsSchema,
  sessionsPatchParamsSchema,
  sessionsResolveParamsSchema,
} from "./params.js";

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

describe("nul-in-session-key-or-label-is-refused: control characters in keys, labels and ids (issue 25)", () => {
  const nul = "\u0000";
  const cases: Array<[string, z.ZodType, Record<string, unknown>, string]> = [
    [
      "agent sessionKey",
      agentParamsSchema,
      { message: "hi", idempotencyKey: "i1", sessionKey: `a${nul}b` },
      "sessionKey",
    ],
    ["agent label", agentParamsSchema, { message: "hi", idempotencyKey: "i1", label: `x${nul}` }, "label"],
    ["agent idempotencyKey", agentParamsSchema, { message: "hi", idempotencyKey: `i${nul}` }, "idempotencyKey"],
    [
      "chat.send sessionKey",
      chatSendParamsSchema,
      { sessionKey: "s\u001b[2J", message: "hi", idempotencyKey: "i" },
      "sessionKey",
    ],
    ["chat.history sessionKey", chatHistoryParamsSchema, { sessionKey: `s${nul}` }, "sessionKey"],
    ["sessions.patch label", sessionsPatchParamsSchema, { key: "s", label: "line\nbreak" }, "label"],
    ["sessions.create key", sessionsCreateParamsSchema, { key: `k${nul}` }, "key"],
    ["sessions.resolve label", sessionsResolveParamsSchema, { label: `l\u007f` }, "label"],
    ["agent.wait runId", agentWaitParamsSchema, { runId: `r${nul}` }, "runId"],
  ];
  for (const [name, schema, params, field] of cases) {
    it(`${name}: refused with params.${field}: must not contain control characters`, () => {
      const r = parseParams(schema, params);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error.message).toBe(`params.${field}: must not contain control characters`);
    });
  }

  it("keys and labels in any other script, emoji and punctuation are still taken", () => {
    const r = parseParams(agentParamsSchema, {
      message: "hi",
      idempotencyKey: "idé-1",
      sessionKey: "agent:main:客服-42_✓",
      label: "Support — Zoë (tier 2) 🚀",
    });
    expect(r.ok).toBe(true);
  });
});
