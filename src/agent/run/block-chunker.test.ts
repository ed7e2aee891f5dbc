import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Block, BlockChunker, blockBodies } from "./block-chunker.js";

const MIN = 800;
const MAX = 1200;

/** An independent reading of CommonMark fences: true when every fence opened in `text` is closed again. */
function fencesBalanced(text: string): boolean {
  let open: { ch: string; len: number } | undefined;
  for (const line of text.split("\n")) {
    const m = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
    if (!m) continue;
    if (!open) {
      if (m[1][0] === "`" && m[2].includes("`")) continue;
      open = { ch: m[1][0], len: m[1].length };
    } else if (m[1][0] === open.ch && m[1].length >= open.len && m[2].trim() === "") {
      open = undefined;
    }
  }
  return open === undefined;
}

const word = fc
  .array(fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz"), { minLength: 1, maxLength: 12 })
  .map((cs) => cs.join(""));
const prose = fc
  .array(
    fc.oneof(
      { weight: 8, arbitrary: word.map((w) => `${w} `) },
      { weight: 2, arbitrary: word.map((w) => `${w}. `) },
      { weight: 1, arbitrary: fc.constant("\n") },
      { weight: 1, arbitrary: fc.constant("\n\n") },
    ),
    { maxLength: 400 },
  )
  .map((parts) => parts.join(""));
const codeLine = fc.oneof(
  { weight: 6, arbitrary: fc.array(word, { maxLength: 12 }).map((ws) => `  ${ws.join(" ")}`) },
  // a line with no whitespace at all: only a hard split can cut it
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 3000 }).map((n) => "x".repeat(n)) },
  // a fence line of the other kind inside the fence is code, not a fence
  { weight: 1, arbitrary: fc.constant("~~~") },
);
const fence = fc
  .tuple(fc.constantFrom("```", "````", "~~~"), fc.constantFrom("", "ts", "python title=x"), fc.array(codeLine))
  .map(([marker, info, lines]) => {
    const other = marker[0] === "`" ? "~~~" : "```";
    const body = lines.map((l) => (l === "~~~" ? other : l));
    return `\n${marker}${info}\n${body.map((l) => `${l}\n`).join("")}${marker}\n`;
  });
/** Markdown-ish text whose fences are balanced: prose and fenced code blocks. */
const message = fc
  .array(fc.oneof({ weight: 3, arbitrary: prose }, { weight: 1, arbitrary: fence }), { maxLength: 8 })
  .map((p) => p.join(""));

/** Streams `text` in deltas of the given sizes; where `idleAfter` says so, the stream stands idle for a second. */
function stream(text: string, sizes: number[], idleAfter: boolean[]): Block[] {
  const chunker = new BlockChunker();
  const blocks: Block[] = [];
  let now = 0;
  let i = 0;
  let k = 0;
  while (i < text.length) {
    const n = sizes.length ? sizes[k % sizes.length] : text.length;
    blocks.push(...chunker.push(text.slice(i, i + n), now));
    i += n;
    now += 10;
    if (idleAfter[k % Math.max(1, idleAfter.length)]) {
      now += 1000;
      blocks.push(...chunker.idle(now));
    }
    k++;
  }
  blocks.push(...chunker.end());
  return blocks;
}

const deltas = fc.array(fc.integer({ min: 1, max: 400 }), { minLength: 1, maxLength: 20 });
const idles = fc.array(
  fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
  { maxLength: 20 },
);

describe("block chunker (properties)", () => {
  it("the blocks, with the fence lines the chunker added taken off, give back the message's text", () => {
    fc.assert(
      fc.property(message, deltas, idles, (text, sizes, idle) => {
        const blocks = stream(text, sizes, idle);
        expect(blockBodies(blocks)).toBe(text);
        for (const b of blocks) expect(b.text).toBe(b.reopen + b.body + b.close);
      }),
      { numRuns: 300 },
    );
  });

  it("no block is longer than 1,200 chars; only the last block and idle blocks are shorter than 800", () => {
    fc.assert(
      fc.property(message, deltas, idles, (text, sizes, idle) => {
        const blocks = stream(text, sizes, idle);
        for (const [i, b] of blocks.entries()) {
          expect(b.text.length).toBeLessThanOrEqual(MAX);
          const last = i === blocks.length - 1;
          if (!last && b.reason !== "idle") expect(b.text.length).toBeGreaterThanOrEqual(MIN);
          if (b.reason === "end") expect(last).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("every block has its code fences balanced, even when a fence was split", () => {
    fc.assert(
      fc.property(message, deltas, idles, (text, sizes, idle) => {
        for (const b of stream(text, sizes, idle)) expect(fencesBalanced(b.text), JSON.stringify(b.text)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("a synthetic close uses the open fence's marker and the next block reopens it with the info string", () => {
    fc.assert(
      fc.property(message, deltas, (text, sizes) => {
        const blocks = stream(text, sizes, []);
        for (const [i, b] of blocks.entries()) {
          if (!b.close) continue;
          const reopen = blocks[i + 1]?.reopen ?? "";
          expect(reopen).not.toBe("");
          const marker = /^ {0,3}(`{3,}|~{3,})/.exec(reopen)?.[1];
          expect(b.close.trim()).toBe(marker);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe("block chunker (examples)", () => {
  const words = (n: number) => "lorem ipsum dolor sit amet ".repeat(Math.ceil(n / 27)).slice(0, n);

  it("breaks after a paragraph rather than at a later newline", () => {
    const text = `${words(900)}\n\n${words(250)}\n${words(300)}`;
    const blocks = new BlockChunker().push(text, 0);
    expect(blocks[0].body).toBe(`${words(900)}\n\n`);
  });

  it("breaks after a sentence rather than at a later space when there is no newline", () => {
    const text = `${words(850)}end. ${words(600)}`;
    const [first] = new BlockChunker().push(text, 0);
    expect(first.body).toBe(`${words(850)}end. `);
  });

  it("does not break inside a fence when a break before it exists", () => {
    const code = Array.from({ length: 80 }, (_, i) => `line ${i}`).join("\n");
    const text = `${words(850)}\n\`\`\`ts\n${code}\n\`\`\`\n${words(900)}`;
    const [first] = new BlockChunker().push(text, 0);
    expect(first.body).toBe(`${words(850)}\n`);
    expect(first.close).toBe("");
  });

  it("a fence longer than a block is closed at the split and reopened with its info string", () => {
    const code = Array.from({ length: 300 }, (_, i) => `  const v${i} = ${i};`).join("\n");
    const text = `\`\`\`ts title=a.ts\n${code}\n\`\`\`\n`;
    const chunker = new BlockChunker();
    const blocks = [...chunker.push(text, 0), ...chunker.end()];
    expect(blocks.length).toBeGreaterThan(3);
    expect(blocks[0].text.endsWith("\n```")).toBe(true);
    expect(blocks[1].text.startsWith("```ts title=a.ts\n")).toBe(true);
    expect(blockBodies(blocks)).toBe(text);
  });

  it("splits a line with no whitespace hard at 1,200 chars", () => {
    const blocks = new BlockChunker().push("x".repeat(2500), 0);
    expect(blocks.map((b) => b.text.length)).toEqual([1200, 1200]);
  });

  it("sends short text that stood idle for a second as a block (coalescing), not before", () => {
    const chunker = new BlockChunker();
    expect(chunker.push("Working on it.", 5_000)).toEqual([]);
    expect(chunker.idleAt()).toBe(6_000);
    expect(chunker.idle(5_999)).toEqual([]);
    expect(chunker.idle(6_000).map((b) => b.text)).toEqual(["Working on it."]);
    expect(chunker.idleAt()).toBeUndefined();
  });

  it("an idle block keeps back a trailing line that may become a fence line", () => {
    const chunker = new BlockChunker();
    chunker.push("Here:\n``", 0);
    expect(chunker.idle(1_000).map((b) => b.text)).toEqual(["Here:\n"]);
    chunker.push("`sh\nls\n```\n", 1_100);
    expect(chunker.end().map((b) => b.text)).toEqual(["```sh\nls\n```\n"]);
  });

  it("an idle block inside a fence closes it, and the text after it reopens the fence", () => {
    const chunker = new BlockChunker();
    chunker.push("```py\nprint(1)\n", 0);
    expect(chunker.idle(1_000).map((b) => b.text)).toEqual(["```py\nprint(1)\n```"]);
    chunker.push("print(2)\n```\n", 2_000);
    expect(chunker.end().map((b) => b.text)).toEqual(["```py\nprint(2)\n```\n"]);
  });

  it("reset drops the waiting text", () => {
    const chunker = new BlockChunker();
    chunker.push("partial answer", 0);
    chunker.reset();
    expect(chunker.end()).toEqual([]);
  });
});
