import { describe, expect, it } from "vitest";
import { orderProfiles, type ProfileState } from "./order.js";
import type { AuthProfile } from "./profiles.js";

const p = (id: string): AuthProfile => ({ id, provider: "openai", mode: "api_key", implicit: false });
const ids = (list: AuthProfile[]) => list.map((x) => x.id);

describe("auth profile order", () => {
  const declared = [p("openai:default"), p("openai:a"), p("openai:b"), p("openai:c")];
  const ok = (): ProfileState => ({ state: "ok" });

  it("the agent's auth.order, then auth.order, then declaration; cooling and disabled last, soonest usable first", () => {
    expect(ids(orderProfiles(declared, {}, ok))).toEqual(["openai:default", "openai:a", "openai:b", "openai:c"]);
    expect(ids(orderProfiles(declared, { provider: ["openai:b"] }, ok))).toEqual([
      "openai:b",
      "openai:default",
      "openai:a",
      "openai:c",
    ]);
    expect(ids(orderProfiles(declared, { agent: ["openai:c"], provider: ["openai:b"] }, ok))).toEqual([
      "openai:c",
      "openai:b",
      "openai:default",
      "openai:a",
    ]);
    const states: Record<string, ProfileState> = {
      "openai:c": { state: "disabled", until: 9_000 },
      "openai:b": { state: "cooldown", until: 5_000 },
      "openai:default": { state: "cooldown", until: 7_000 },
    };
    const ordered = orderProfiles(
      declared,
      { agent: ["openai:c"], provider: ["openai:b"] },
      (x) => states[x.id] ?? ok(),
    );
    expect(ids(ordered)).toEqual(["openai:a", "openai:b", "openai:default", "openai:c"]);
  });
});
