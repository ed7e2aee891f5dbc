/**
 * Tool calls as the model meets them, through the real openai-completions provider and the fake model server: what
 * tools a run is offered (tools.allow/deny, per agent) and what comes back when a call is wrong. The model's next
 * request, read from the server's log, is what the model saw.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { CapturedRequest } from "../../testing/fake-model-server.js";
import type { Tool } from "../../tools/types.js";
import { type RunHarness, startRunHarness } from "./run-harness.test-support.js";

/** the harness's agents.defaults, which a config replacing `agents` has to state again */
const DEFAULTS = { defaults: { model: { primary: "fake/m" } } };

let h: RunHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function offeredTools(req: CapturedRequest): string[] {
  const tools = (req.body.tools ?? []) as Array<{ function: { name: string } }>;
  return tools.map((t) => t.function.name);
}

/** The tool results the model was sent in this request, in order. */
function toolResults(req: CapturedRequest): string[] {
  const messages = req.body.messages as Array<{ role: string; content: unknown }>;
  return messages.filter((m) => m.role === "tool").map((m) => String(m.content));
}

describe("tool calls", () => {
  it("a call with a number for read's path comes back to the model as an error naming the field, and the run goes on", async () => {
    h = await startRunHarness({});
    h.enqueue({ toolCalls: [{ name: "read", arguments: { path: 42 } }] }, { text: "I will use a string next time." });

    const final = await h.send("read it");

    expect(final.status).toBe("ok");
    expect(toolResults(h.requests[1])).toEqual(["invalid arguments for read: path: expected string, got number"]);
    expect(final.result.payloads.map((p) => p.text)).toEqual(["I will use a string next time."]);
  });

  it("a tool with only a JSON Schema (as plugins declare them) never runs on a call its schema refuses", async () => {
    const calls: unknown[] = [];
    const lookup: Tool = {
      name: "lookup",
      description: "Looks a word up.",
      parameters: {
        type: "object",
        properties: { word: { type: "string" }, limit: { type: "integer", minimum: 1 } },
        required: ["word"],
      },
      concurrency: "parallel",
      execute: async (args) => {
        calls.push(args);
        return { content: `found ${String(args.word)}` };
      },
    };
    h = await startRunHarness({ tools: [lookup] });
    h.enqueue(
      { toolCalls: [{ name: "lookup", arguments: { word: 7, limit: 0 } }] },
      { toolCalls: [{ name: "lookup", arguments: { word: "gate" } }] },
      { text: "done" },
    );

    const final = await h.send("look up a word");

    expect(final.status).toBe("ok");
    expect(toolResults(h.requests[1])).toEqual([
      "invalid arguments for lookup: word: expected string, got number; limit: must be >= 1",
    ]);
    expect(calls).toEqual([{ word: "gate" }]);
  });

  it("an agent with tools.deny [exec] is not offered exec, and a call to it is told exec is not available", async () => {
    h = await startRunHarness({
      config: () => ({
        // the default list applies to every agent, then an agent's own list takes more away
        tools: { deny: ["mess*"] },
        agents: { ...DEFAULTS, list: [{ id: "main" }, { id: "ops", tools: { deny: ["exec"] } }] },
      }),
    });
    h.enqueue({ toolCalls: [{ name: "exec", arguments: { command: "echo ran > ran.txt" } }] }, { text: "ok" });

    const final = await h.send("run it", { sessionKey: "agent:ops:test" });

    expect(final.status).toBe("ok");
    expect(offeredTools(h.requests[0])).toEqual(["read", "write", "edit"]);
    expect(toolResults(h.requests[1])).toEqual(["tool exec is not available to this agent"]);

    // the other agent keeps exec
    h.enqueue({ text: "hi" });
    await h.send("hello", { sessionKey: "agent:main:test" });
    expect(offeredTools(h.requests[2])).toEqual(["read", "write", "edit", "exec"]);
  });

  it("tools.allow [group:fs] leaves every agent only the file tools, and an agent's allow narrows it further", async () => {
    h = await startRunHarness({
      config: () => ({
        tools: { allow: ["group:fs"] },
        agents: { ...DEFAULTS, list: [{ id: "main" }, { id: "reader", tools: { allow: ["READ"] } }] },
      }),
    });
    h.enqueue({ text: "a" }, { text: "b" });

    await h.send("hi", { sessionKey: "agent:main:test" });
    await h.send("hi", { sessionKey: "agent:reader:test" });

    expect(offeredTools(h.requests[0])).toEqual(["read", "write", "edit"]);
    expect(offeredTools(h.requests[1])).toEqual(["read"]);
  });
});
