import { describe, expect, it } from "vitest";
import { parseIdentity } from "./identity.js";
import { STARTER_FILES } from "./workspace.js";

describe("the agent's identity from IDENTITY.md", () => {
  it("reads name, emoji and avatar in the forms agents write them", () => {
    const md = "# Identity\n\n- **Name:** Clawd\n* Emoji: 🦞\nAvatar: **avatars/clawd.png**\n- Vibe: calm\n";
    expect(parseIdentity(md)).toEqual({ name: "Clawd", emoji: "🦞", avatar: "avatars/clawd.png" });
  });

  it("the starter file's placeholders are no identity yet", () => {
    expect(parseIdentity(STARTER_FILES["IDENTITY.md"])).toEqual({});
  });
});
