import { describe, expect, it } from "vitest";
import { errorFrameWithin, errorReplyBudget, MIN_ERROR_REPLY_BYTES } from "./error-budget.js";

describe("error replies within the request's size", () => {
  const error = { code: "invalid_params", message: "params.x: unknown field; ".repeat(40), details: { n: [1, 2, 3] } };

  it("keeps an error that fits as it is", () => {
    const frame = errorFrameWithin("r1", error, 1_000_000);
    expect(JSON.parse(frame)).toEqual({ type: "res", id: "r1", ok: false, error });
  });

  it("drops details first, then cuts the message, keeping code and id", () => {
    const noDetails = JSON.parse(errorFrameWithin("r1", error, 1100));
    expect(noDetails.error).toEqual({ code: "invalid_params", message: error.message });
    const frame = errorFrameWithin("r1", error, 300);
    expect(Buffer.byteLength(frame)).toBeLessThanOrEqual(300);
    const cut = JSON.parse(frame);
    expect(cut).toMatchObject({ id: "r1", error: { code: "invalid_params" } });
    expect(cut.error.message).toMatch(/^params\.x: unknown field; .*…$/);
  });

  it("counts bytes, not characters, when the message needs escaping or is not ASCII", () => {
    const wide = { code: "invalid_params", message: '"ü"\n'.repeat(500) };
    expect(Buffer.byteLength(errorFrameWithin("r", wide, 400))).toBeLessThanOrEqual(400);
  });

  it("never budgets less than the floor, however small the request", () => {
    expect(errorReplyBudget(10)).toBe(MIN_ERROR_REPLY_BYTES);
    expect(errorReplyBudget(50_000)).toBe(50_000);
  });
});
