import { describe, expect, it } from "vitest";
import { createLogger, type LoggerOptions, logLevelFromEnv } from "./logger.js";

const T = Date.parse("2026-11-30T19:04:05.123Z");

function capture(opts: LoggerOptions = {}) {
  const lines: string[] = [];
  const logger = createLogger({
    level: "info",
    format: "text",
    now: () => T,
    write: (line) => lines.push(line),
    ...opts,
  });
  return { logger, lines };
}

describe("logger", () => {
  it("writes text lines with an ISO timestamp, a padded level, the message and key=value fields", () => {
    const { logger, lines } = capture();
    logger.info("connect", { client: "cli", mode: "cli", role: "operator", scopes: 3 });
    logger.error("run ended", { status: "error" });
    expect(lines).toEqual([
      "2026-11-30T19:04:05.123Z INFO  connect client=cli mode=cli role=operator scopes=3",
      "2026-11-30T19:04:05.123Z ERROR run ended status=error",
    ]);
  });

  it("writes the one-shot commands' untimed lines when no format is chosen", () => {
    const { logger, lines } = capture({ format: undefined });
    logger.warn("config cache unreadable", { path: "/tmp/x y" });
    expect(lines).toEqual(['[loopgate] warn: config cache unreadable path="/tmp/x y"']);
  });

  it("quotes text values that have spaces, quotes or '=' so a line splits back into its fields", () => {
    const { logger, lines } = capture();
    logger.info("disconnect", { reason: "client closed", note: 'say "hi"', eq: "a=b", empty: "", gone: undefined });
    expect(lines[0]).toBe(
      '2026-11-30T19:04:05.123Z INFO  disconnect reason="client closed" note="say \\"hi\\"" eq="a=b" empty=""',
    );
  });

  it("writes one JSON object per line with time, level and msg first, and keeps them from being overwritten", () => {
    const { logger, lines } = capture({ format: "json" });
    logger.warn("slow reader dropped", { conn: "c1", unreadBytes: 10, msg: "not mine", error: new Error("boom") });
    expect(JSON.parse(lines[0])).toEqual({
      time: "2026-11-30T19:04:05.123Z",
      level: "warn",
      msg: "slow reader dropped",
      conn: "c1",
      unreadBytes: 10,
      error: "boom",
    });
  });

  it("drops lines below its level without formatting them, and says which levels are on", () => {
    const { logger, lines } = capture({ level: "warn" });
    let formatted = false;
    const costly = {
      toJSON() {
        formatted = true;
        return "x";
      },
    };
    logger.info("hidden", { costly });
    logger.debug("hidden");
    logger.warn("shown");
    expect(lines).toHaveLength(1);
    expect(formatted).toBe(false);
    expect(logger.isEnabled?.("debug")).toBe(false);
    expect(logger.isEnabled?.("error")).toBe(true);
  });

  it("takes LOOPGATE_LOG_LEVEL in any case, and warns once about a value that is not a level", () => {
    const warnings: string[] = [];
    const warn = (m: string) => warnings.push(m);
    expect(logLevelFromEnv({ LOOPGATE_LOG_LEVEL: "DEBUG" }, "info", warn)).toBe("debug");
    expect(logLevelFromEnv({}, "info", warn)).toBe("info");
    expect(warnings).toEqual([]);
    expect(logLevelFromEnv({ LOOPGATE_LOG_LEVEL: "loud" }, "info", warn)).toBe("info");
    expect(warnings).toEqual([
      'LOOPGATE_LOG_LEVEL: expected one of error, warn, info, debug, got "loud"; using "info"',
    ]);
  });
});
