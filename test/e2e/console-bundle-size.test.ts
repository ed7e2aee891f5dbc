/*
 * The console's first page stays small (issue 31 item 7): index.html and every file it loads (the app's JS with
 * Preact, marked and DOMPurify, and its CSS), gzipped, at most 60 KB. The operator pages are chunks of their own,
 * loaded when opened, so they are not part of the first page. Reads the built files in dist/console/.
 */
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { describe, expect, it } from "vitest";

const dir = path.resolve(import.meta.dirname, "../../dist/console");
const BUDGET = 60 * 1024;

describe("the console's first page", () => {
  it("is at most 60 KB gzipped, markdown renderer and sanitizer included", () => {
    const html = fs.readFileSync(path.join(dir, "index.html"), "utf8");
    const loaded = [...html.matchAll(/(?:src|href)="\.\/(assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(loaded.some((f) => f.endsWith(".js"))).toBe(true);
    expect(loaded.some((f) => f.endsWith(".css"))).toBe(true);
    const sizes = ["index.html", ...loaded].map((f) => ({
      file: f,
      gzipped: zlib.gzipSync(fs.readFileSync(path.join(dir, f))).length,
    }));
    const total = sizes.reduce((n, s) => n + s.gzipped, 0);
    console.log(`console first page: ${(total / 1024).toFixed(1)} KB gzipped (${JSON.stringify(sizes)})`);
    // the markdown module (its link hook) is in the first page's bundle, not left for a later chunk
    const js = loaded.filter((f) => f.endsWith(".js")).map((f) => fs.readFileSync(path.join(dir, f), "utf8"));
    expect(js.join("").includes("noopener noreferrer")).toBe(true);
    expect(total).toBeLessThanOrEqual(BUDGET);
  });
});
