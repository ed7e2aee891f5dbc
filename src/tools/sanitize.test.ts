import { describe, expect, it } from "vitest";
import { capForModel, capText, redactSecrets, redactText, sanitizeForEvent } from "./sanitize.js";

// Built at run time so no credential-shaped literal sits in the repository.
const OPENAI_KEY = `sk-${"A1b2C3d4".repeat(4)}`;
const GITHUB_TOKEN = `ghp_${"x9".repeat(18)}`;
const SLACK_TOKEN = `xoxb-${"1234567890"}-${"abcdefABCDEF"}`;
const AWS_KEY = `AKIA${"ABCDEFGHIJKLMNOP"}`;

describe("capText", () => {
  it("leaves short text alone", () => {
    expect(capText("short", 100)).toBe("short");
  });

  it("keeps head and tail with a marker saying how much was cut, within the limit", () => {
    const text = `HEAD${"m".repeat(10000)}TAIL`;
    const capped = capText(text, 200);
    expect(capped.length).toBeLessThanOrEqual(200);
    expect(capped.startsWith("HEAD")).toBe(true);
    expect(capped.endsWith("TAIL")).toBe(true);
    const marker = /\n…\[truncated (\d+) chars\]…\n/.exec(capped);
    expect(marker).not.toBeNull();
    expect(capped.length - marker![0].length + Number(marker![1])).toBe(text.length);
  });

  it("caps at 8000 chars by default", () => {
    expect(capText("x".repeat(20000)).length).toBeLessThanOrEqual(8000);
  });

  it("does not split an emoji at the cut", () => {
    const capped = capText("😀".repeat(100), 61);
    expect(capped).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    expect(capped).not.toMatch(/(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });
});

describe("capForModel", () => {
  it("keeps the end of the output, where errors usually are, and whole lines", () => {
    const lines = Array.from({ length: 5000 }, (_, i) => `line ${i}`);
    lines.push("Error: the build failed");
    const capped = capForModel(lines.join("\n"), 2000);
    expect(capped.length).toBeLessThanOrEqual(2000);
    expect(capped.startsWith("line 0\n")).toBe(true);
    expect(capped.endsWith("Error: the build failed")).toBe(true);
    // Both cuts fall on line breaks, and the marker counts the whole lines that were left out.
    const m =
      /\nline (\d+)\n\n\[\.\.\. \d+ chars \((\d+) lines\) omitted from the middle \.\.\.\]\n\nline (\d+)\n/.exec(
        capped,
      );
    expect(m).not.toBeNull();
    expect(Number(m![3]) - Number(m![1]) - 1).toBe(Number(m![2]));
  });
});

describe("sanitizeForEvent", () => {
  it("replaces image payloads with their type and size, at any depth", () => {
    const data = Buffer.alloc(3000, 7).toString("base64");
    const result = {
      content: [
        { type: "text", text: "see image" },
        { type: "image", data, mimeType: "image/png", width: 60, height: 50 },
        { type: "image", source: { type: "base64", media_type: "image/jpeg", data } },
      ],
    };
    expect(sanitizeForEvent(result)).toEqual({
      content: [
        { type: "text", text: "see image" },
        { type: "image", mimeType: "image/png", bytes: 3000, width: 60, height: 50, omitted: true },
        { type: "image", mimeType: "image/jpeg", bytes: 3000, omitted: true },
      ],
    });
  });

  it("caps long strings and survives cycles", () => {
    const value: Record<string, unknown> = { text: "y".repeat(9000) };
    value.self = value;
    const clean = sanitizeForEvent(value) as Record<string, unknown>;
    expect((clean.text as string).length).toBeLessThanOrEqual(8000);
    expect(clean.text).toMatch(/…\[truncated \d+ chars\]…/);
    expect(clean.self).toBe("[circular]");
    expect(() => JSON.stringify(clean)).not.toThrow();
  });

  it("summarizes data URLs and buffers instead of logging their bytes", () => {
    const clean = sanitizeForEvent({ url: `data:image/png;base64,${"AAAA".repeat(100)}`, raw: Buffer.alloc(42) });
    expect(clean).toEqual({ url: "[data URL: image/png, 300 bytes]", raw: { type: "binary", bytes: 42 } });
  });

  it("keeps the same object twice when it is shared but not cyclic", () => {
    const shared = { a: 1 };
    expect(sanitizeForEvent({ x: shared, y: shared })).toEqual({ x: { a: 1 }, y: { a: 1 } });
  });
});

describe("redactSecrets", () => {
  it("redacts values under credential-like keys, deep, and leaves counts like maxTokens visible", () => {
    const args = {
      url: "https://api.example.com",
      apiKey: "abc",
      headers: { Authorization: "whatever", Cookie: "sid=1" },
      nested: [{ db_password: "hunter2", client_secret: "s3" }],
      GITHUB_TOKEN: "t",
      private_key: "k",
      maxTokens: 4096,
    };
    expect(redactSecrets(args)).toEqual({
      url: "https://api.example.com",
      apiKey: "[redacted]",
      headers: { Authorization: "[redacted]", Cookie: "[redacted]" },
      nested: [{ db_password: "[redacted]", client_secret: "[redacted]" }],
      GITHUB_TOKEN: "[redacted]",
      private_key: "[redacted]",
      maxTokens: 4096,
    });
    expect(args.apiKey).toBe("abc");
  });

  it("redacts credential-shaped strings under any key", () => {
    const clean = redactSecrets({ note: `keys ${OPENAI_KEY} ${GITHUB_TOKEN} ${SLACK_TOKEN} ${AWS_KEY}` });
    expect(clean.note).toBe("keys [redacted] [redacted] [redacted] [redacted]");
  });

  it("redacts only the secret part of an exec command", () => {
    const command = `curl -H "Authorization: Bearer abcdef123456" https://x.test/api && OPENAI_API_KEY=${OPENAI_KEY} node run.js --max-tokens 100`;
    expect(redactSecrets({ command }).command).toBe(
      'curl -H "Authorization: Bearer [redacted]" https://x.test/api && OPENAI_API_KEY=[redacted] node run.js --max-tokens 100',
    );
  });

  it("redacts passwords in URLs, flags, env assignments and query strings", () => {
    expect(redactText("git clone https://me:pa55word@git.example.com/r.git")).toBe(
      "git clone https://me:[redacted]@git.example.com/r.git",
    );
    expect(redactText("mysql --password='p w' -u root")).toBe("mysql --password='[redacted]' -u root");
    expect(redactText('export DB_PASSWORD="p w"; make')).toBe('export DB_PASSWORD="[redacted]"; make');
    expect(redactText("GET /cb?code=1&access_token=zzz&x=2")).toBe("GET /cb?code=1&access_token=[redacted]&x=2");
  });

  it("redacts a PEM private key block", () => {
    const pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----";
    expect(redactText(`key:\n${pem}\nend`)).toBe("key:\n[redacted]\nend");
  });

  it("leaves ordinary code alone", () => {
    const code = "const token = getToken();\nconst maxTokens = 100;\nskip-this-step";
    expect(redactText(code)).toBe(code);
  });
});
