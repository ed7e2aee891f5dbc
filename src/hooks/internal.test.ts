import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  type AgentBootstrapContext,
  discoverInternalHooks,
  InternalHookRegistry,
  internalHookEvent,
  registerInternalHooksFromConfig,
} from "./internal.js";
import type { HookLogger } from "./logger.js";

const FIXTURES = resolve(import.meta.dirname, "../../test/fixtures/hooks");

function recordingLogger() {
  const lines: Array<{ level: "info" | "warn" | "error"; message: string }> = [];
  const logger: HookLogger = {
    info: (message) => lines.push({ level: "info", message }),
    warn: (message) => lines.push({ level: "warn", message }),
    error: (message) => lines.push({ level: "error", message }),
  };
  const at = (level: "info" | "warn" | "error") => lines.filter((l) => l.level === level).map((l) => l.message);
  return { logger, lines, at };
}

describe("internal hook registry", () => {
  it("a `command` hook hears every command while a `command:new` hook hears only /new", async () => {
    const { logger } = recordingLogger();
    const registry = new InternalHookRegistry(logger);
    const heard: string[] = [];
    registry.register("command", (e) => void heard.push(`any:${e.action}`), { name: "all-commands" });
    registry.register("command:new", (e) => void heard.push(`new-only:${e.action}`), { name: "new-only" });

    await registry.trigger(internalHookEvent("command:new", {}));
    await registry.trigger(internalHookEvent("command:reset", {}));
    await registry.trigger(internalHookEvent("command:stop", {}));

    expect(heard).toEqual(["any:new", "new-only:new", "any:reset", "any:stop"]);
  });

  it("runs handlers in registration order across generic and specific keys, each finishing before the next", async () => {
    const { logger } = recordingLogger();
    const registry = new InternalHookRegistry(logger);
    const order: string[] = [];
    registry.register(
      "message:received",
      async () => {
        order.push("first:start");
        await Promise.resolve();
        order.push("first:end");
      },
      { name: "first" },
    );
    registry.register("message", () => void order.push("second"), { name: "second" });
    registry.register("message:received", () => void order.push("third"), { name: "third" });

    await registry.trigger(internalHookEvent("message:received", { text: "hi" }));

    expect(order).toEqual(["first:start", "first:end", "second", "third"]);
  });

  it("a throwing hook is logged by name and the other hooks and the caller carry on", async () => {
    const { logger, at } = recordingLogger();
    const registry = new InternalHookRegistry(logger);
    const ran: string[] = [];
    registry.register("gateway:startup", () => void ran.push("before"), { name: "before" });
    registry.register(
      "gateway:startup",
      () => {
        throw new Error("disk full");
      },
      { name: "flaky-backup" },
    );
    registry.register(
      "gateway:startup",
      async () => {
        throw new Error("async failure");
      },
      { name: "flaky-async" },
    );
    registry.register("gateway:startup", () => void ran.push("after"), { name: "after" });

    await expect(registry.trigger(internalHookEvent("gateway:startup", {}))).resolves.toBeDefined();

    expect(ran).toEqual(["before", "after"]);
    const warnings = at("warn");
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toContain('"flaky-backup"');
    expect(warnings[0]).toContain("disk full");
    expect(warnings[1]).toContain('"flaky-async"');
  });

  it("an unregistered hook no longer runs", async () => {
    const registry = new InternalHookRegistry(recordingLogger().logger);
    const ran: string[] = [];
    const off = registry.register("command:stop", () => void ran.push("stop"), { name: "stopper" });
    off();
    await registry.trigger(internalHookEvent("command:stop", {}));
    expect(ran).toEqual([]);
    expect(registry.has("command", "stop")).toBe(false);
  });

  it("refuses a malformed event key at registration", () => {
    const registry = new InternalHookRegistry(recordingLogger().logger);
    expect(() => registry.register("command:new:extra", () => {}, { name: "x" })).toThrow(/invalid event key/);
  });

  it("hooks can push messages for the user", async () => {
    const registry = new InternalHookRegistry(recordingLogger().logger);
    registry.register("command:reset", (e) => void e.messages?.push("memory saved"), { name: "memory" });
    const event = await registry.trigger({ type: "command", action: "reset", context: {} });
    expect(event.messages).toEqual(["memory saved"]);
  });
});

describe("internal hook discovery", () => {
  it("loads good hook folders and warns about each broken one by folder, without losing the rest", async () => {
    const { logger, at } = recordingLogger();
    const registry = new InternalHookRegistry(logger);
    const report = await discoverInternalHooks(
      [join(FIXTURES, "internal"), join(FIXTURES, "does-not-exist")],
      registry,
      logger,
    );

    expect(report.loaded.map((h) => h.name).sort()).toEqual(["bootstrap-notes", "greeter", "index-named"]);
    expect(report.failed.map((f) => f.source).sort()).toEqual([
      join(FIXTURES, "internal", "bad-front-matter"),
      join(FIXTURES, "internal", "no-handler"),
    ]);
    const warnings = at("warn");
    expect(warnings.some((w) => w.includes("bad-front-matter") && w.includes("YAML"))).toBe(true);
    expect(warnings.some((w) => w.includes("no-handler") && w.includes("no handler module"))).toBe(true);

    // The discovered hooks really fire; the broken one with a handler on disk does not.
    const newEvent = await registry.trigger(internalHookEvent("command:new", {}));
    expect(newEvent.messages).toEqual(["greeter saw command:new"]);
    const startup = await registry.trigger(internalHookEvent("gateway:startup", {}));
    expect(startup.messages).toEqual(["index-named started"]);
  });

  it("an agent:bootstrap hook can add and remove bootstrap files before the prompt is built", async () => {
    const { logger } = recordingLogger();
    const registry = new InternalHookRegistry(logger);
    await discoverInternalHooks([join(FIXTURES, "internal")], registry, logger);

    const context: AgentBootstrapContext = {
      workspaceDir: "/ws",
      bootstrapFiles: [
        { name: "AGENTS.md", path: "/ws/AGENTS.md", content: "be nice" },
        { name: "HEARTBEAT.md", path: "/ws/HEARTBEAT.md", content: "tick" },
      ],
    };
    await registry.trigger(internalHookEvent("agent:bootstrap", context));

    expect(context.bootstrapFiles.map((f) => f.name)).toEqual(["AGENTS.md", "NOTES.md"]);
    expect(context.bootstrapFiles[1]).toMatchObject({ path: "/ws/NOTES.md", content: "remember the milk" });
  });

  it("registers config-declared hook modules and reports a missing module without stopping", async () => {
    const { logger, at } = recordingLogger();
    const registry = new InternalHookRegistry(logger);
    const report = await registerInternalHooksFromConfig(
      [
        { events: ["command:new", "command:reset"], module: "config-hooks/handler.js" },
        { events: ["command:new"], module: "config-hooks/missing.js" },
        { events: [], module: "config-hooks/handler.js" },
      ],
      registry,
      logger,
      { baseDir: FIXTURES },
    );

    expect(report.loaded).toHaveLength(1);
    expect(report.failed.map((f) => f.source)).toEqual(["hooks.internal.entries[1]", "hooks.internal.entries[2]"]);
    expect(at("warn").some((w) => w.includes("entries[1]") && w.includes("missing.js"))).toBe(true);

    const reset = await registry.trigger(internalHookEvent("command:reset", {}));
    expect(reset.messages).toEqual(["config hook saw command:reset"]);
  });

  it("warns when a hook listens to an event the gateway never fires", async () => {
    const { logger, at } = recordingLogger();
    const registry = new InternalHookRegistry(logger);
    await registerInternalHooksFromConfig(
      [{ events: ["command:nwe"], module: join(FIXTURES, "config-hooks/handler.js") }],
      registry,
      logger,
    );
    expect(at("warn").some((w) => w.includes('"command:nwe"'))).toBe(true);
  });
});
