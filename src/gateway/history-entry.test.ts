import { describe, expect, it } from "vitest";
import type { TranscriptRow } from "../storage/types.js";
import { HISTORY_IMAGE_MAX_BYTES, historyEntry } from "./history-entry.js";

const image = (bytes: number) => ({
  type: "image" as const,
  mimeType: "image/png",
  data: Buffer.alloc(bytes, 1).toString("base64"),
  blob: `sha-${bytes}`,
  width: 10,
  height: 10,
});

describe("a transcript row as chat clients read it", () => {
  it("is OpenClaw's message shape: role, content blocks and timestamp on the entry", () => {
    const row: TranscriptRow = {
      sessionKey: "agent:main:a",
      generation: 1,
      seq: 4,
      kind: "message",
      runId: "r1",
      createdAt: 1000,
      message: {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "hmm" },
          { type: "toolCall", id: "c1", name: "read", arguments: { path: "a" } },
        ],
      },
    };
    expect(historyEntry(row)).toEqual({
      seq: 4,
      kind: "message",
      runId: "r1",
      createdAt: 1000,
      timestamp: 1000,
      role: "assistant",
      content: row.message?.content,
    });
  });

  it("carries a small image's bytes, and a big one (or one past the entry's budget) as a reference", () => {
    const small = image(1000);
    const big = image(HISTORY_IMAGE_MAX_BYTES + 1);
    const row: TranscriptRow = {
      sessionKey: "agent:main:a",
      generation: 1,
      seq: 1,
      kind: "message",
      createdAt: 1,
      message: { role: "user", content: [{ type: "text", text: "look" }, small, big] },
    };
    const content = historyEntry(row).content as Array<Record<string, unknown>>;
    expect(content[1]).toEqual(small);
    expect(content[2]).toEqual({
      type: "image",
      mimeType: "image/png",
      blob: big.blob,
      bytes: HISTORY_IMAGE_MAX_BYTES + 1,
      width: 10,
      height: 10,
      omitted: true,
    });
    const many = Array.from({ length: 6 }, () => image(HISTORY_IMAGE_MAX_BYTES));
    const crowded = { ...row, message: { role: "user" as const, content: many } };
    const kept = (historyEntry(crowded).content as Array<Record<string, unknown>>).filter((p) => p.data);
    expect(kept).toHaveLength(4);
  });
});
