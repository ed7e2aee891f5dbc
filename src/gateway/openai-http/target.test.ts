import type http from "node:http";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../config/index.js";
import { OpenAiHttpError } from "./errors.js";
import { chatCompletionRequest, responsesRequest } from "./requests.js";
import { modelIds, runTarget } from "./target.js";

const config = parseConfig({
  agents: {
    defaults: { model: { primary: "t/m" }, models: { "t/m": { alias: "fast" }, "t/*": { alias: "ignored" } } },
    list: [{ id: "main", default: true }, { id: "research" }],
  },
});

const req = (headers: Record<string, string> = {}) => ({ headers }) as unknown as http.IncomingMessage;
const target = (model: string, headers: Record<string, string> = {}, user?: string) =>
  runTarget(req(headers), config, { model, ...(user ? { user } : {}) }, () => "fresh");

function refusal(fn: () => unknown): OpenAiHttpError {
  try {
    fn();
  } catch (err) {
    if (err instanceof OpenAiHttpError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

describe("which agent and session a request reaches", () => {
  it("every way of naming an agent reaches it, and with no session named each request gets a fresh one", () => {
    for (const model of ["loopgate/research", "openclaw/research", "openclaw:research", "agent:research", "research"])
      expect(target(model)).toEqual({ agentId: "research", sessionKey: "agent:research:openai:fresh" });
    for (const model of ["loopgate", "openclaw", "loopgate/default"])
      expect(target(model).sessionKey).toBe("agent:main:openai:fresh");
  });

  it("an alias runs the header's agent (else the default) with that model; a wildcard entry's alias is not a model", () => {
    expect(target("FAST")).toMatchObject({ agentId: "main", modelAlias: "FAST" });
    expect(target("fast", { "x-loopgate-agent-id": "research" })).toMatchObject({
      agentId: "research",
      modelAlias: "fast",
    });
    expect(refusal(() => target("ignored")).status).toBe(404);
    expect(modelIds(config)).toEqual(["loopgate/main", "loopgate/research", "fast"]);
  });

  it("the user field is a stable per-user session; the session header wins over it and keeps its own agent", () => {
    expect(target("loopgate/research", {}, "bob").sessionKey).toBe("agent:research:openai-user:bob");
    expect(target("loopgate", { "x-openclaw-session-key": "agent:research:x" }, "bob")).toEqual({
      sessionKey: "agent:research:x",
    });
    expect(refusal(() => target("loopgate", {}, "two words")).param).toBe("user");
    // previous_response_id's session keeps its own agent, unless the request names one
    const continued = runTarget(
      req(),
      config,
      { model: "loopgate", user: "bob", continues: "agent:research:y" },
      () => "f",
    );
    expect(continued).toEqual({ sessionKey: "agent:research:y" });
  });

  it("an unknown model is 404 listing the models, a conflicting header 400, an unknown agent 404", () => {
    const unknown = refusal(() => target("gpt-4o"));
    expect([unknown.status, unknown.code, unknown.param]).toEqual([404, "model_not_found", "model"]);
    expect(unknown.message).toContain("loopgate/main, loopgate/research, fast");
    // a client that always sends some model still reaches the header's agent
    expect(target("gpt-4o", { "x-openclaw-agent-id": "research" }).agentId).toBe("research");
    expect(refusal(() => target("loopgate/main", { "x-openclaw-agent-id": "research" })).status).toBe(400);
    const ghost = refusal(() => target("loopgate/ghost"));
    expect([ghost.status, ghost.code]).toEqual([404, "agent_not_found"]);
  });
});

describe("what a request asks of the agent", () => {
  it("the newest user message is the input and system text the extra system prompt; earlier turns are not replayed", () => {
    const turn = chatCompletionRequest({
      model: "loopgate",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "old question" },
        { role: "assistant", content: "old answer" },
        { role: "developer", content: [{ type: "text", text: "Use metric units." }] },
        {
          role: "user",
          content: [
            { type: "text", text: "new " },
            { type: "text", text: "question" },
          ],
        },
      ],
    });
    expect(turn.message).toBe("new question");
    expect(turn.system).toBe("Be brief.\n\nUse metric units.");
    expect(turn.stream).toBe(false);
  });

  it("what cannot be honoured is refused naming the field", () => {
    const base = { model: "loopgate", messages: [{ role: "user", content: "hi" }] };
    const param = (body: unknown) => refusal(() => chatCompletionRequest(body)).param;
    expect(param({ ...base, n: 3 })).toBe("n");
    expect(param({ ...base, logprobs: true })).toBe("logprobs");
    expect(param({ ...base, response_format: { type: "json_schema" } })).toBe("response_format");
    expect(param({ ...base, messages: [{ role: "user", content: [{ type: "image_url" }] }] })).toBe(
      "messages[0].content[0].type",
    );
    expect(param({ ...base, messages: [...base.messages, { role: "assistant", content: "x" }] })).toBe(
      "messages[1].role",
    );
    // sampling knobs belong to the agent's model config: accepted and ignored
    expect(chatCompletionRequest({ ...base, temperature: 0.2, max_tokens: 10 }).message).toBe("hi");
  });

  it("the Responses API's input may be a string or items; instructions join the system prompt", () => {
    expect(responsesRequest({ model: "loopgate", input: "hello", instructions: "Be kind." })).toMatchObject({
      message: "hello",
      system: "Be kind.",
    });
    const items = responsesRequest({
      model: "loopgate",
      input: [
        { role: "developer", content: "Rules." },
        { type: "message", role: "user", content: [{ type: "input_text", text: "item text" }] },
      ],
      previous_response_id: "resp_abc",
    });
    expect(items).toMatchObject({ message: "item text", system: "Rules.", previousResponseId: "resp_abc" });
    expect(
      refusal(() => responsesRequest({ model: "loopgate", input: [{ type: "function_call_output", output: "x" }] }))
        .param,
    ).toBe("input[0].type");
  });
});
