/*
 * `loopgate agent --attach` as a user runs it, embedded (--local) and through a gateway: real child processes, the
 * scripted provider saying what reached the model (image count, the last image's type and size, the user's text).
 */
import fs from "node:fs";
import path from "node:path";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { cliSandbox, useCliSandboxes } from "../fixtures/cli/sandbox.js";

useCliSandboxes();

async function files(tmp: string): Promise<{ shot: string; notes: string; blob: string }> {
  const shot = path.join(tmp, "shot.png");
  fs.writeFileSync(
    shot,
    await sharp({ create: { width: 4000, height: 3000, channels: 3, background: "#336699" } })
      .png()
      .toBuffer(),
  );
  const notes = path.join(tmp, "notes.txt");
  fs.writeFileSync(notes, "remember the milk\n");
  const blob = path.join(tmp, "data.bin");
  fs.writeFileSync(blob, Buffer.from([0, 1, 2, 3, 0xff]));
  return { shot, notes, blob };
}

const SEEN =
  /^1 image\(s\); last: image\/png 1200×900 \d+ bytes; text: look\n\n\[attached file: notes\.txt\]\nremember the milk\n$/;

describe("loopgate agent --attach", () => {
  it("embedded: an image reaches the model scaled to 1200 px and a text file inline", async () => {
    const s = cliSandbox({ prefix: "attach-local", script: "image-echo.script.json5" });
    const f = await files(s.tmp);
    const r = await s.agent(["--local", "-m", "look", "--attach", f.shot, "--attach", f.notes]).done;
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(SEEN);
  });

  it("through a gateway: the same attachments arrive the same way", async () => {
    const s = cliSandbox({ prefix: "attach-remote", script: "image-echo.script.json5" });
    const f = await files(s.tmp);
    const gw = await s.gateway();
    const r = await s.agent(["--url", gw.url, "-m", "look", "--attach", f.shot, "--attach", f.notes]).done;
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(SEEN);
  });

  it("a binary file is refused naming it, and a missing file is a usage error", async () => {
    const s = cliSandbox({ prefix: "attach-bad", script: "image-echo.script.json5" });
    const f = await files(s.tmp);
    const gw = await s.gateway();
    const bad = await s.agent(["--url", gw.url, "-m", "look", "--attach", f.blob]).done;
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain(
      "attachments[0] (data.bin): content that is neither an image (PNG, JPEG, GIF, WebP) nor UTF-8 text cannot be attached",
    );
    const missing = await s.agent(["--local", "-m", "look", "--attach", path.join(s.tmp, "nope.png")]).done;
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`--attach ${path.join(s.tmp, "nope.png")}: no such file`);
  });
});
