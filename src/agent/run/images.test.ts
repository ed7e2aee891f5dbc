/**
 * Images through a whole run: the real read tool on a PNG in the workspace, the real openai-completions provider
 * against the fake model server on loopback, a real SQLite file. What the model receives is downscaled; what
 * events and transcript rows carry is metadata, never base64.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import sharp from "sharp";
import { afterEach, describe, expect, it } from "vitest";
import { IMAGE_OMITTED_TEXT } from "../../providers/image-input.js";
import type { CapturedRequest } from "../../testing/fake-model-server.js";
import { prepareAttachments } from "../attachments.js";
import { type RunHarness, startRunHarness } from "./run-harness.test-support.js";

/** A run of base64 this long in text that should hold none means an image leaked in whole. */
const BASE64_RUN = /[A-Za-z0-9+/]{200,}={0,2}/;

let h: RunHarness | undefined;
let workspace: string;
afterEach(async () => {
  await h?.close();
  h = undefined;
  fs.rmSync(workspace, { recursive: true, force: true });
});

/** A harness whose model `fake/m` is configured with `input` (absent when undefined), its workspace a temp dir. */
async function harness(input?: Array<"text" | "image">): Promise<RunHarness> {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), "lg-img-ws-"));
  h = await startRunHarness({
    config: (baseUrl) => ({
      agents: { defaults: { model: { primary: "fake/m" }, workspace } },
      models: {
        providers: {
          fake: {
            api: "openai-completions",
            baseUrl,
            apiKey: "x",
            models: [{ id: "m", maxTokens: 256, ...(input ? { input } : {}) }],
          },
        },
      },
    }),
  });
  return h;
}

async function writePng(name: string, width: number, height: number): Promise<void> {
  const png = await sharp({ create: { width, height, channels: 3, background: "#2060a0" } })
    .png()
    .toBuffer();
  fs.writeFileSync(path.join(workspace, name), png);
}

type WireMessage = { role: string; content: unknown; tool_call_id?: string };
const wireMessages = (req: CapturedRequest | undefined) => (req?.body.messages ?? []) as WireMessage[];

function dataUrlsIn(req: CapturedRequest | undefined): string[] {
  return wireMessages(req).flatMap((m) =>
    Array.isArray(m.content)
      ? (m.content as Array<{ type: string; image_url?: { url: string } }>).flatMap((p) =>
          p.type === "image_url" && p.image_url ? [p.image_url.url] : [],
        )
      : [],
  );
}

async function sizeOf(dataUrl: string) {
  const meta = await sharp(Buffer.from(dataUrl.slice(dataUrl.indexOf(",") + 1), "base64")).metadata();
  return { format: meta.format, width: meta.width, height: meta.height };
}

function transcriptData(file: string): string[] {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare("SELECT data FROM transcript ORDER BY generation, seq").all() as Array<{ data: string }>).map(
      (r) => r.data,
    );
  } finally {
    db.close();
  }
}

describe("a read of a 4000×3000 PNG", () => {
  it("reaches the model as a ≤1200 px image, while events and transcript rows carry no base64", async () => {
    const run = await harness(["text", "image"]);
    await writePng("shot.png", 4000, 3000);
    run.enqueue({ toolCalls: [{ name: "read", arguments: { path: "shot.png" } }] }, { text: "a blue rectangle" });
    const final = await run.send("what does shot.png show?");
    expect(final.result.payloads[0]?.text).toBe("a blue rectangle");

    const [url] = dataUrlsIn(run.requests[1]);
    expect(url).toMatch(/^data:image\/png;base64,/);
    expect(await sizeOf(url ?? "")).toEqual({ format: "png", width: 1200, height: 900 });
    const tool = wireMessages(run.requests[1]).find((m) => m.role === "tool");
    expect(tool?.content).toMatch(/^shot\.png: image\/png 4000×3000 → sent as 1200×900, /);

    const result = run.events.find((e) => e.stream === "tool" && e.data.phase === "result");
    expect(result?.data).toMatchObject({
      isError: false,
      images: [{ type: "image", mimeType: "image/png", width: 1200, height: 900, omitted: true }],
    });
    expect(JSON.stringify(run.events)).not.toMatch(BASE64_RUN);

    const rows = transcriptData(run.store.file);
    expect(rows.some((r) => r.includes('"blob":'))).toBe(true);
    for (const row of rows) expect(row).not.toMatch(BASE64_RUN);
    // the history of the next turn re-hydrates the image from its blob
    run.enqueue({ text: "still blue" });
    await run.send("and now?");
    expect(dataUrlsIn(run.requests[2])).toEqual([url]);
  });

  it("goes as a note to a model whose entry has no image input (the default for openai-completions)", async () => {
    const run = await harness();
    await writePng("shot.png", 400, 300);
    run.enqueue({ toolCalls: [{ name: "read", arguments: { path: "shot.png" } }] }, { text: "cannot see it" });
    await run.send("what does shot.png show?");
    expect(dataUrlsIn(run.requests[1])).toEqual([]);
    const tool = wireMessages(run.requests[1]).find((m) => m.role === "tool");
    expect(tool?.content).toMatch(
      new RegExp(`^shot\\.png: image/png 400×300, .*\\n${escapeRegExp(IMAGE_OMITTED_TEXT)}$`),
    );
  });
});

describe("an image the read tool cannot use", () => {
  it("gives the model a clear tool error and the run goes on", async () => {
    const run = await harness(["text", "image"]);
    fs.writeFileSync(path.join(workspace, "broken.png"), Buffer.from("\x89PNG\r\n\x1a\n this is no image", "latin1"));
    run.enqueue({ toolCalls: [{ name: "read", arguments: { path: "broken.png" } }] }, { text: "that file is broken" });
    const final = await run.send("look at broken.png");
    const tool = wireMessages(run.requests[1]).find((m) => m.role === "tool");
    expect(tool?.content).toMatch(/^broken\.png: cannot decode image\/png image \(.+\)$/);
    const result = run.events.find((e) => e.stream === "tool" && e.data.phase === "result");
    expect(result?.data).toMatchObject({ isError: true });
    expect(final.stopReason).toBe("stop");
    expect(final.result.payloads[0]?.text).toBe("that file is broken");
  });
});

describe("an image attached to the message", () => {
  async function attachedPng(width: number, height: number) {
    const png = await sharp({ create: { width, height, channels: 3, background: "#a02060" } })
      .png()
      .toBuffer();
    const { attachments } = await prepareAttachments({
      message: "x",
      attachments: [{ fileName: "photo.png", content: png.toString("base64") }],
    });
    return { attachments };
  }

  it("reaches the model as an image part of the user message, and is stored with the accepted message", async () => {
    const run = await harness(["text", "image"]);
    run.enqueue({ text: "a magenta square" });
    const final = await run.send("what is this?", await attachedPng(2400, 2400));
    expect(final.result.payloads[0]?.text).toBe("a magenta square");
    const [user] = wireMessages(run.requests[0]).filter((m) => m.role === "user");
    expect(user?.content).toEqual([
      { type: "text", text: "what is this?" },
      { type: "image_url", image_url: { url: expect.stringMatching(/^data:image\/png;base64,/) } },
    ]);
    expect(await sizeOf(dataUrlsIn(run.requests[0])[0] ?? "")).toEqual({ format: "png", width: 1200, height: 1200 });
    // the durable queue row holds the prepared image: a restart runs the message with it
    const params = run.store.getRun(final.runId)?.params as { attachments?: Array<Record<string, unknown>> };
    expect(params.attachments?.[0]).toMatchObject({ type: "image", mimeType: "image/png", width: 1200, height: 1200 });
    for (const row of transcriptData(run.store.file)) expect(row).not.toMatch(BASE64_RUN);
  });

  it("fails the run with an error naming the model when the model takes no images", async () => {
    const run = await harness(["text"]);
    const final = await run.send("what is this?", await attachedPng(20, 20));
    expect(final.status).toBe("error");
    expect(final.error).toBe(
      'model fake/m does not accept images (its models[] entry has no "image" in input): 1 image attachment(s) not sent',
    );
    expect(run.requests).toHaveLength(0);
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
