import { describe, expect, it } from "vitest";
import { CliError } from "./exit-codes.js";
import { resolveGatewayLogging } from "./gateway-logging.js";

describe("gateway log settings", () => {
  it("logs info as text by default", () => {
    expect(resolveGatewayLogging({}, {})).toEqual({ level: "info", format: "text", warnings: [] });
  });

  it("--verbose turns on debug over LOOPGATE_LOG_LEVEL; the environment sets level and format otherwise", () => {
    const env = { LOOPGATE_LOG_LEVEL: "warn", LOOPGATE_LOG_FORMAT: "json" };
    expect(resolveGatewayLogging({}, env)).toMatchObject({ level: "warn", format: "json" });
    expect(resolveGatewayLogging({ verbose: true, logFormat: "text" }, env)).toMatchObject({
      level: "debug",
      format: "text",
    });
  });

  it("refuses an unknown --log-format as a usage error naming the flag and the choices", () => {
    let thrown: unknown;
    try {
      resolveGatewayLogging({ logFormat: "xml" }, {});
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(CliError);
    expect((thrown as CliError).exitCode).toBe(2);
    expect((thrown as CliError).message).toBe('--log-format: expected text or json, got "xml"');
  });

  it("keeps the defaults and collects a warning for bad environment values", () => {
    const settings = resolveGatewayLogging({}, { LOOPGATE_LOG_LEVEL: "loud", LOOPGATE_LOG_FORMAT: "xml" });
    expect(settings).toMatchObject({ level: "info", format: "text" });
    expect(settings.warnings).toEqual([
      'LOOPGATE_LOG_FORMAT: expected text or json, got "xml"; using "text"',
      'LOOPGATE_LOG_LEVEL: expected one of error, warn, info, debug, got "loud"; using "info"',
    ]);
  });
});
