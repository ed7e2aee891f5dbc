import { describe, expect, it } from "vitest";
import { auditRow as row, auditTestStore as store } from "../storage/audit-rows.test-support.js";
import type { SqliteStore } from "../storage/sqlite-store.js";
import { readAuditPage } from "./audit-page.js";
import { GatewayError } from "./errors.js";

/** the session service's read, over a bare store */
function reads(s: SqliteStore) {
  return { listAuditEvents: async (q: Parameters<SqliteStore["listAuditEvents"]>[0]) => s.listAuditEvents(q) };
}

describe("audit.list pages", () => {
  const everyone = () => true;

  it("a cursor walks every row exactly once, newest first, even while new rows arrive", async () => {
    const s = store();
    s.appendAuditEvents(Array.from({ length: 7 }, () => row()));
    const seen: number[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await readAuditPage(reads(s), { query: {}, limit: 3, cursor, canSee: everyone });
      seen.push(...page.events.map((e) => e.sequence));
      cursor = page.nextCursor;
      pages++;
      // a row written between two pages lands before the first page, not in the next one
      if (pages === 1) s.appendAuditEvents([row()]);
    } while (cursor !== undefined && pages < 10);
    expect(seen).toEqual([7, 6, 5, 4, 3, 2, 1]);
    expect(pages).toBe(3);
  });

  it("a page that ends exactly at the last row has no next cursor", async () => {
    const s = store();
    s.appendAuditEvents(Array.from({ length: 3 }, () => row()));
    const page = await readAuditPage(reads(s), { query: {}, limit: 3, canSee: everyone });
    expect(page.events).toHaveLength(3);
    expect(page.nextCursor).toBeUndefined();
  });

  it("leaves out sessions the caller may not see and still fills the page", async () => {
    const s = store();
    s.appendAuditEvents(
      Array.from({ length: 9 }, (_, i) => row({ sessionKey: i % 3 === 0 ? "agent:main:mine" : "agent:main:other" })),
    );
    const page = await readAuditPage(reads(s), { query: {}, limit: 2, canSee: (k) => k === "agent:main:mine" });
    expect(page.events.map((e) => e.sessionKey)).toEqual(["agent:main:mine", "agent:main:mine"]);
    const rest = await readAuditPage(reads(s), {
      query: {},
      limit: 2,
      cursor: page.nextCursor,
      canSee: (k) => k === "agent:main:mine",
    });
    expect(rest.events).toHaveLength(1);
    expect(rest.nextCursor).toBeUndefined();
  });

  it("refuses a cursor it did not make, naming the param", async () => {
    const s = store();
    const bad = () => readAuditPage(reads(s), { query: {}, limit: 2, cursor: "bm9wZQ", canSee: everyone });
    await expect(bad()).rejects.toThrow(GatewayError);
    await expect(bad()).rejects.toThrow(/params\.cursor/);
  });
});
