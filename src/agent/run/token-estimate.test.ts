import { describe, expect, it } from "vitest";
import type { Usage } from "../../providers/types.js";
import { call, result, said, user } from "./test-helpers.js";
import { estimateContextTokens, estimateMessageTokens, projectContextTokens, toolsChars } from "./token-estimate.js";

const usage = (input: number, output: number, cacheRead = 0): Usage => ({
  input,
  output,
  cacheRead,
  cacheWrite: 0,
  total: input + output + cacheRead,
});

describe("estimateContextTokens", () => {
  it("counts about four characters per token plus a small overhead per message", () => {
    expect(estimateMessageTokens(user("x".repeat(400)))).toBe(104);
    expect(estimateMessageTokens(said("x".repeat(401)))).toBe(105);
    expect(estimateContextTokens([user("x".repeat(400))], "s".repeat(40))).toBe(114);
  });

  it("counts tool call arguments and tool results, so a big file write is not invisible", () => {
    const small = call("c1", "write", { path: "a.txt", content: "hi" });
    const big = call("c1", "write", { path: "a.txt", content: "x".repeat(40_000) });
    expect(estimateMessageTokens(big) - estimateMessageTokens(small)).toBeGreaterThanOrEqual(9_999);
    expect(estimateMessageTokens(result("c1", "y".repeat(8_000)))).toBeGreaterThan(2_000);
  });

  it("counts the tool schemas sent with the request", () => {
    const tools = [{ name: "read", description: "d".repeat(400), parameters: { type: "object" } }];
    expect(estimateContextTokens([user("hi")], "", tools)).toBeGreaterThan(estimateContextTokens([user("hi")]) + 100);
  });

  it("counts the tool schemas as their JSON's length on every run, though a schema's JSON is measured once", () => {
    const schema = { type: "object", properties: { path: { type: "string", description: 'a "quoted" päth\n' } } };
    const first = [
      { name: "read", description: 'Reads a file — ünïcode, "quotes" and \\ too', parameters: schema },
      { name: "noop", description: "", parameters: { type: "object", properties: {} } },
    ];
    // the next run builds new spec objects around the same schema, here with another name and description
    const second = [{ description: "Reads é", name: "read_file", parameters: schema }, first[1]];
    // a spec with more than the three fields is measured whole
    const extra = [{ name: "x", description: "y", parameters: schema, strict: true }];
    for (const tools of [first, second, first, extra]) {
      expect(toolsChars(tools)).toBe(JSON.stringify(tools).length);
    }
    expect(estimateContextTokens([], "", second)).toBe(Math.ceil(JSON.stringify(second).length / 4));
  });
});

describe("projectContextTokens", () => {
  const history = [user("x".repeat(400)), said("y".repeat(400)), user("z".repeat(400))];

  it("uses the provider's count for the previous call and estimates only what was added since", () => {
    const projected = projectContextTokens({
      lastUsage: usage(5_000, 300, 2_000),
      coveredMessageCount: 2,
      messages: history,
    });
    expect(projected).toBe(5_000 + 300 + 2_000 + estimateMessageTokens(history[2]));
  });

  it("estimates the whole request when there is no usable usage", () => {
    const full = estimateContextTokens(history, "system");
    expect(projectContextTokens({ messages: history, system: "system" })).toBe(full);
    // a provider that reports nothing
    expect(
      projectContextTokens({ lastUsage: usage(0, 0), coveredMessageCount: 2, messages: history, system: "system" }),
    ).toBe(full);
    // usage from before the history was replaced (it covered more messages than there are now)
    expect(
      projectContextTokens({ lastUsage: usage(9_000, 1), coveredMessageCount: 7, messages: history, system: "system" }),
    ).toBe(full);
  });
});
