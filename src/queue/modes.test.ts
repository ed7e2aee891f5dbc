import { describe, expect, it } from "vitest";
import { isQueueMode, resolveQueueMode } from "./modes.js";

describe("queue mode names", () => {
  it("accepts exactly steer, followup, collect and interrupt", () => {
    for (const m of ["steer", "followup", "collect", "interrupt"]) expect(isQueueMode(m)).toBe(true);
    for (const m of ["Steer", "queue", "", "followUp", undefined, null, 1, {}]) expect(isQueueMode(m)).toBe(false);
  });
});

describe("which queue mode a message gets", () => {
  const byChannel = { telegram: "collect", discord: "interrupt" } as const;

  it("per-message mode wins over everything", () => {
    expect(
      resolveQueueMode({ message: "followup", session: "collect", channel: "telegram", byChannel, global: "steer" }),
    ).toBe("followup");
  });

  it("then the session setting, over the channel and the global mode", () => {
    expect(resolveQueueMode({ session: "interrupt", channel: "telegram", byChannel, global: "steer" })).toBe(
      "interrupt",
    );
  });

  it("then the channel's setting, over the global mode", () => {
    expect(resolveQueueMode({ channel: "telegram", byChannel, global: "steer" })).toBe("collect");
    expect(resolveQueueMode({ channel: "discord", byChannel, global: "steer" })).toBe("interrupt");
  });

  it("then the global mode, for a channel without a setting or no channel at all", () => {
    expect(resolveQueueMode({ channel: "slack", byChannel, global: "followup" })).toBe("followup");
    expect(resolveQueueMode({ byChannel, global: "collect" })).toBe("collect");
  });

  it("skips a level whose value is not a queue mode instead of failing or picking it", () => {
    expect(resolveQueueMode({ session: "bogus", channel: "telegram", byChannel, global: "steer" })).toBe("collect");
    expect(resolveQueueMode({ message: "", session: "followup", byChannel, global: "steer" })).toBe("followup");
  });

  it("does not treat built-in object keys as channel names", () => {
    for (const channel of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      expect(resolveQueueMode({ channel, byChannel: {}, global: "steer" })).toBe("steer");
    }
  });
});
