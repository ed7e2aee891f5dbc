import { describe, expect, it, vi } from "vitest";
import { agentParamsSchema, parseParams, parseWith, requestFrameSchema } from "./params.js";

// The precompiled checks must agree with zod on every input: the same values accepted with the same output, and
// everything else refused with zod's own message. Compared here against the schemas' own safeParse.
const fieldValues: Record<string, unknown[]> = {
  message: ["hi", "", 3, null, "line\nbreak"],
  idempotencyKey: ["k1", "", "x".repeat(512), "x".repeat(513), "bad\u0007", 7],
  sessionKey: ["agent:main:one", "", "x".repeat(513), "tab\tkey", "c1\u0085", null],
  agentId: ["main", "Main_2", "-bad", "", "x".repeat(65), 1],
  sessionId: ["s1", "", "nul\u0000"],
  model: ["fake/model", ""],
  provider: ["openai", "", false],
  thinking: ["low", "adaptive", "loud", null],
  timeout: [0, 30, -1, 1.5, 2 ** 53, -0, Number.NaN, "30"],
  lane: ["main", ""],
  label: ["my run", "", "x".repeat(513)],
  deliver: [true, false, "yes"],
  queueMode: ["followup", "nope"],
  attachments: [[], [{ content: "aGk=" }]],
  replyTo: ["someone"],
  sesionKey: ["typo"],
};

function* agentInputs(): Generator<unknown> {
  const base = { message: "hello", idempotencyKey: "run-1" };
  yield base;
  yield { message: "hello" };
  yield { idempotencyKey: "run-1" };
  yield null;
  yield [];
  yield "params";
  for (const [field, values] of Object.entries(fieldValues)) {
    for (const value of values) yield { ...base, [field]: value };
  }
  yield { ...base, sessionKey: "agent:main:one", agentId: "main", thinking: "low", timeout: 60, deliver: false };
}

describe("agent params: the plain turn's shape skips zod, with zod's answer", () => {
  it("accepts and refuses exactly what the zod schema does, with the same value and the same message", () => {
    for (const input of agentInputs()) {
      const zod = agentParamsSchema.safeParse(input);
      const got = parseParams(agentParamsSchema, input);
      expect(got.ok, JSON.stringify(input)).toBe(zod.success);
      if (got.ok && zod.success) expect(got.value).toEqual(zod.data);
    }
  });

  it("a refused field is worded by zod as before", () => {
    const got = parseParams(agentParamsSchema, { message: "hi", idempotencyKey: "k", sessionKey: "a\u0001b" });
    expect(got).toMatchObject({
      ok: false,
      error: { message: "params.sessionKey: must not contain control characters" },
    });
  });

  it("a plain turn's params are checked without zod", () => {
    const spy = vi.spyOn(agentParamsSchema, "safeParse");
    const got = parseParams(agentParamsSchema, { message: "hi", idempotencyKey: "k", sessionKey: "agent:main:x" });
    expect(got.ok).toBe(true);
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore();
  });
});

describe("request frame: the common shape skips zod, with zod's answer", () => {
  it("accepts and refuses exactly what the zod schema does", () => {
    const inputs: unknown[] = [
      { type: "req", id: "1", method: "agent", params: { a: 1 } },
      { type: "req", id: "1", method: "health" },
      { type: "req", id: "1", method: "health", extra: true },
      { type: "req", id: "", method: "health" },
      { type: "res", id: "1", method: "health" },
      { type: "req", id: 1, method: "health" },
      { type: "req", id: "1" },
      { type: "req", id: "1", method: "x", params: null },
      null,
      [],
    ];
    for (const input of inputs) {
      const zod = requestFrameSchema.safeParse(input);
      const got = parseWith(requestFrameSchema, input, "frame");
      expect(got.ok, JSON.stringify(input)).toBe(zod.success);
      if (got.ok && zod.success) expect(got.value).toStrictEqual(zod.data);
    }
  });
});
