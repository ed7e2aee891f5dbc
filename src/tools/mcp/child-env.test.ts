// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the tests write "${ENV}" references as a config does
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../config/errors.js";
import { mcpChildEnv, mcpHeaders } from "./child-env.js";
import { globMatcher, toolFilterMatcher } from "./glob.js";

const parent = {
  PATH: "/usr/bin",
  HOME: "/home/u",
  LANG: "C.UTF-8",
  TERM: "xterm",
  SHELL: "/bin/bash",
  USER: "u",
  OPENAI_API_KEY: "sk-test-secret",
  LOOPGATE_GATEWAY_TOKEN: "gw-secret",
  NODE_OPTIONS: "--inspect",
  LD_PRELOAD: "/x.so",
  GITHUB_TOKEN: "ghp_secret",
};

describe("a stdio MCP server's environment", () => {
  it("is PATH, HOME, LANG and TERM from the parent plus its own env, nothing else", () => {
    expect(mcpChildEnv("gh", { GREETING: "hi" }, parent)).toEqual({
      PATH: "/usr/bin",
      HOME: "/home/u",
      LANG: "C.UTF-8",
      TERM: "xterm",
      GREETING: "hi",
    });
  });

  it("resolves ${ENV} references from the parent, and names the key path of one that is unset", () => {
    expect(mcpChildEnv("gh", { GITHUB_TOKEN: "${GITHUB_TOKEN}" }, parent).GITHUB_TOKEN).toBe("ghp_secret");
    const err = (() => {
      try {
        mcpChildEnv("gh", { X: "${NOPE}" }, parent);
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err?.problems).toEqual(["mcp.servers.gh.env.X: references ${NOPE}, which is not set in the environment"]);
  });

  it("drops NODE_OPTIONS, LD_* and DYLD_* even when the server's own env sets them", () => {
    const env = mcpChildEnv(
      "x",
      {
        NODE_OPTIONS: "--require /tmp/evil.js",
        LD_PRELOAD: "/tmp/evil.so",
        LD_LIBRARY_PATH: "/tmp",
        DYLD_INSERT_LIBRARIES: "/tmp/e.dylib",
        OK: "1",
      },
      parent,
    );
    expect(Object.keys(env).sort()).toEqual(["HOME", "LANG", "OK", "PATH", "TERM"]);
  });

  it("headers resolve ${ENV} the same way, naming the header when unset", () => {
    expect(mcpHeaders("r", { Authorization: "Bearer ${GITHUB_TOKEN}" }, parent)).toEqual({
      Authorization: "Bearer ghp_secret",
    });
    expect(() => mcpHeaders("r", { "X-Key": "${MISSING}" }, parent)).toThrow(
      "mcp.servers.r.headers.X-Key: references ${MISSING}",
    );
  });
});

describe("tool globs", () => {
  it("* matches any run, ? one character, case-sensitively; exclude wins over include", () => {
    expect(globMatcher(["get-*"])("get-sum")).toBe(true);
    expect(globMatcher(["get-*"])("Get-sum")).toBe(false);
    expect(globMatcher(["read_?"])("read_x")).toBe(true);
    expect(globMatcher(["read_?"])("read_xy")).toBe(false);
    expect(globMatcher(["a.b"])("axb")).toBe(false);
    const offered = toolFilterMatcher({ include: ["get-*"], exclude: ["get-env"] });
    expect(["get-sum", "get-env", "echo"].filter(offered)).toEqual(["get-sum"]);
    expect(toolFilterMatcher(undefined)("anything")).toBe(true);
  });
});
