import { describe, expect, it } from "vitest";
import { parseAgentOptions } from "./agent.js";
import { CliError } from "./exit-codes.js";

describe("loopgate agent --reasoning / --verbose", () => {
  it("pass the levels on as the run's reasoningLevel and verboseLevel; a bare --verbose means on", () => {
    expect(parseAgentOptions({ message: "hi", reasoning: "stream", verbose: "full" })).toMatchObject({
      reasoningLevel: "stream",
      verboseLevel: "full",
    });
    expect(parseAgentOptions({ message: "hi", verbose: true }).verboseLevel).toBe("on");
    expect(parseAgentOptions({ message: "hi" })).toMatchObject({ reasoningLevel: undefined, verboseLevel: undefined });
  });

  it("an unknown level is a usage error naming the flag and the choices", () => {
    expect(() => parseAgentOptions({ message: "hi", reasoning: "loud" })).toThrow(
      new CliError('--reasoning: expected one of off, on, stream, got "loud"'),
    );
    expect(() => parseAgentOptions({ message: "hi", verbose: "max" })).toThrow(
      '--verbose: expected one of off, on, full, got "max"',
    );
  });
});

describe("loopgate agent --session-key with a control character (issue 25)", () => {
  it("is a usage error naming the flag, before anything is opened or stored", () => {
    expect(() => parseAgentOptions({ message: "hi", sessionKey: "support\u001b[31m" })).toThrow(
      new CliError("--session-key: must not contain control characters"),
    );
  });
});
