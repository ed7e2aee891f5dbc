import { describe, expect, it } from "vitest";
import { migrations, pendingMigrations } from "./migrations.js";

const m = (version: number) => ({ version, name: `m${version}`, sql: "" });

describe("migration order", () => {
  it("runs what a database lacks in version order, whatever the order in the file and with gaps", () => {
    // what a merge of branches that each reserved a number may leave: appended in merge order, 4 not merged yet
    const merged = [m(1), m(2), m(5), m(3)];
    expect(pendingMigrations(merged, 0).map((x) => x.version)).toEqual([1, 2, 3, 5]);
    expect(pendingMigrations(merged, 2).map((x) => x.version)).toEqual([3, 5]);
    expect(pendingMigrations(merged, 5)).toEqual([]);
  });

  it("refuses two migrations with one version number", () => {
    expect(() => pendingMigrations([m(1), m(3), m(3)], 0)).toThrow("version 3 is defined twice");
  });

  it("the shipped list has unique versions", () => {
    expect(() => pendingMigrations(migrations, 0)).not.toThrow();
  });
});
