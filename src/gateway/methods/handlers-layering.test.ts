import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * Gateway handlers reach sessions, runs and audit rows through the session service (gw.service.sessions), never
 * the store: the store's backend (SQLite today, Postgres next) and its asynchrony stay out of the handlers.
 */
const here = path.dirname(fileURLToPath(import.meta.url));
const handlers = fs.readdirSync(here).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"));

function offences(source: string): string[] {
  const found: string[] = [];
  for (const [i, line] of source.split("\n").entries()) {
    if (/from\s+["'][./]*(?:\.\.\/)*storage\//.test(line)) found.push(`line ${i + 1} imports storage: ${line.trim()}`);
    if (/\.store\b/.test(line)) found.push(`line ${i + 1} touches .store: ${line.trim()}`);
  }
  return found;
}

describe("gateway method handlers", () => {
  it("are found (the check below is not vacuous)", () => {
    expect(handlers).toEqual(expect.arrayContaining(["sessions.ts", "chat.ts", "agent-events.ts", "audit.ts"]));
  });

  it.each(handlers)("%s neither imports storage nor touches a store", (file) => {
    expect(offences(fs.readFileSync(path.join(here, file), "utf8"))).toEqual([]);
  });

  it("the check catches a handler that reaches into the store", () => {
    expect(
      offences('import type { Store } from "../../storage/types.js";\nconst r = gw.service.rt.store.getRun(id);'),
    ).toHaveLength(2);
  });
});
