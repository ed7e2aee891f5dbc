import { describe, expect, it } from "vitest";
import { FRAME_LIMITS, findLimitProblem } from "./limits.js";

const scan = (value: unknown, limits = FRAME_LIMITS) => findLimitProblem(Buffer.from(JSON.stringify(value)), limits);
const small = { maxDepth: 3, maxKeysPerObject: 3, maxItemsPerArray: 3, maxStringBytes: 8, maxValues: 20 };

describe("structural limits on a frame, before it is parsed", () => {
  it("lets an ordinary request through", () => {
    const frame = {
      type: "req",
      id: "1",
      method: "agent",
      params: { message: 'hi "there" \\ [{', n: -1.5e3, ok: true },
    };
    expect(scan(frame)).toBeUndefined();
  });

  it("names depth, keys, items, string length and the total, with where it happened", () => {
    expect(scan({ a: { b: { c: { d: 1 } } } }, small)).toMatchObject({
      path: "frame.a.b.c",
      message: "nesting deeper than 3 levels",
    });
    expect(scan({ a: { w: 1, x: 2, y: 3, z: 4 } }, small)).toMatchObject({
      path: "frame.a",
      message: "an object with more than 3 keys",
    });
    expect(scan({ list: [1, 2, 3, 4] }, small)).toMatchObject({
      path: "frame.list",
      message: "an array with more than 3 items",
    });
    expect(scan({ list: ["ok", "much too long"] }, small)).toMatchObject({
      path: "frame.list[1]",
      message: "a string of more than 8 bytes",
    });
    expect(
      scan(
        {
          a: [1, 2],
          b: [3, 4],
          c: [
            [5, 6],
            [7, 8],
            [9, 10],
          ],
        },
        { ...small, maxValues: 10 },
      ),
    ).toMatchObject({
      message: "more than 10 keys and values in one frame",
    });
  });

  it("refuses a short frame nested too deep, and lets one through whose brackets are text", () => {
    const deep = Buffer.from(`{"type":"req","id":"d","params":${"[".repeat(32)}${"]".repeat(32)}}`);
    expect(deep.length).toBeLessThan(200);
    expect(findLimitProblem(deep)).toMatchObject({ id: "d", message: "nesting deeper than 32 levels" });
    const mixed = Buffer.from(`{"a":${'{"b":'.repeat(16)}${"[".repeat(16)}1${"]".repeat(16)}${"}".repeat(16)}}`);
    expect(findLimitProblem(mixed)).toMatchObject({ message: "nesting deeper than 32 levels" });
    expect(findLimitProblem(Buffer.from(`{"id":"t","message":"${"[{".repeat(40)}"}`))).toBeUndefined();
    const shallow = { maxDepth: 2, maxKeysPerObject: 100, maxItemsPerArray: 100, maxStringBytes: 100, maxValues: 100 };
    expect(scan({ a: [[1]] }, shallow)).toMatchObject({ path: "frame.a[0]", message: "nesting deeper than 2 levels" });
    expect(scan({ a: [1], b: "[[[" }, shallow)).toBeUndefined();
  });

  it("does not count quotes and brackets inside strings, escaped quotes included", () => {
    expect(scan({ s: '\\"[[[[{{{{,,,,:' }, { ...small, maxStringBytes: 100 })).toBeUndefined();
  });

  it("reports the frame's id when it came before the problem", () => {
    expect(scan({ type: "req", id: "r-7", params: { w: 1, x: 2, y: 3, z: 4 } }, small)?.id).toBe("r-7");
    expect(scan({ params: { w: 1, x: 2, y: 3, z: 4 }, id: "late" }, small)?.id).toBeUndefined();
  });

  it("stops at the first problem: a million keys are not all read", () => {
    const keys = Array.from({ length: 1_000_000 }, (_, i) => `"k${i}":0`).join(",");
    const problem = findLimitProblem(Buffer.from(`{"params":{${keys}}}`));
    expect(problem).toMatchObject({ path: "frame.params", message: "an object with more than 1000 keys" });
  });
});
