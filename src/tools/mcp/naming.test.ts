import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { exposeMcpToolNames, mcpToolName, TOOL_NAME_MAX } from "./naming.js";

const PROVIDER_SAFE = /^[A-Za-z0-9_-]{1,64}$/;

describe("MCP tool names", () => {
  it("are <server>__<tool>, with characters outside [A-Za-z0-9_-] turned into -", () => {
    expect(mcpToolName("everything", "get-sum")).toBe("everything__get-sum");
    expect(mcpToolName("fs", "read.file")).toBe("fs__read-file");
    expect(mcpToolName("my server", "ünïcode/tool name")).toBe("my-server__-n-code-tool-name");
  });

  it("a long name is cut to 64 and ends in a hash of the full name, so two long names sharing a prefix differ", () => {
    const long = "a".repeat(80);
    const one = mcpToolName("srv", `${long}_one`);
    const two = mcpToolName("srv", `${long}_two`);
    console.log(`long: ${one}`);
    expect(one).toHaveLength(TOOL_NAME_MAX);
    expect(one).toMatch(/^srv__a+-[0-9a-f]{8}$/);
    expect(one).not.toBe(two);
    // stable across runs: the same input gives the same name
    expect(mcpToolName("srv", `${long}_one`)).toBe(one);
  });

  it("two tools that map to the same name are told apart with -2, and a name another source uses is never taken", () => {
    const names = exposeMcpToolNames(
      [
        { server: "a", tool: "x.y" },
        { server: "a", tool: "x-y" },
        { server: "a", tool: "x y" },
        { server: "b", tool: "read" },
      ],
      new Set(["b__read"]),
    );
    expect(names).toEqual(["a__x-y", "a__x-y-2", "a__x-y-3", "b__read-2"]);
  });

  it("property: every exposed name is provider-safe and unique, whatever the server and tool names", () => {
    const refs = fc.array(
      fc.record({ server: fc.string({ minLength: 1, maxLength: 70 }), tool: fc.string({ maxLength: 120 }) }),
      {
        maxLength: 40,
      },
    );
    fc.assert(
      fc.property(refs, (list) => {
        const names = exposeMcpToolNames(list);
        expect(new Set(names).size).toBe(names.length);
        for (const name of names) expect(name).toMatch(PROVIDER_SAFE);
      }),
      { numRuns: 300 },
    );
  });

  it("property: a safe, short pair keeps its plain name", () => {
    const safe = fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/);
    fc.assert(
      fc.property(safe, safe, (server, tool) => {
        expect(mcpToolName(server, tool)).toBe(`${server}__${tool}`);
      }),
    );
  });
});
