import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createEditTool } from "./edit.js";
import { makeSandbox, type Sandbox } from "./test-helpers.js";
import { checkToolArgs } from "./validate.js";

const edit = createEditTool();
let sb: Sandbox;
let file: string;
beforeEach(async () => {
  sb = await makeSandbox();
  file = path.join(sb.ws, "app.ts");
  await writeFile(file, "const a = 1;\nconst b = 2;\nconst c = 2;\n");
});
afterEach(() => sb.cleanup());

describe("edit", () => {
  it("replaces the one occurrence and reports the line it changed", async () => {
    const out = await edit.execute({ path: "app.ts", oldText: "const b = 2;", newText: "const b = 3;" }, sb.ctx());
    expect(await readFile(file, "utf8")).toBe("const a = 1;\nconst b = 3;\nconst c = 2;\n");
    expect(out.content).toBe("edited app.ts: replaced line 2 (1 line -> 1 line)");
  });

  it("reports a multi-line change as a line range", async () => {
    const out = await edit.execute(
      { path: "app.ts", oldText: "const b = 2;\nconst c = 2;\n", newText: "// gone\n" },
      sb.ctx(),
    );
    expect(out.content).toBe("edited app.ts: replaced lines 2-3 (2 lines -> 1 line)");
    expect(await readFile(file, "utf8")).toBe("const a = 1;\n// gone\n");
  });

  it("says the text was not found and leaves the file alone", async () => {
    await expect(edit.execute({ path: "app.ts", oldText: "const z", newText: "x" }, sb.ctx())).rejects.toThrow(
      /oldText was not found in app.ts/,
    );
    expect(await readFile(file, "utf8")).toBe("const a = 1;\nconst b = 2;\nconst c = 2;\n");
  });

  it("says how many times ambiguous text occurs and asks for more context", async () => {
    await expect(edit.execute({ path: "app.ts", oldText: "= 2;", newText: "= 5;" }, sb.ctx())).rejects.toThrow(
      "oldText occurs 2 times in app.ts; include more surrounding context so it matches exactly once",
    );
  });

  it("inserts replacement text literally, even when it contains $ patterns", async () => {
    await edit.execute({ path: "app.ts", oldText: "const a = 1;", newText: "const a = `$&$1$$`;" }, sb.ctx());
    expect(await readFile(file, "utf8")).toContain("const a = `$&$1$$`;\n");
  });

  it("matches LF oldText in a CRLF file and keeps the CRLF endings", async () => {
    await writeFile(file, "one\r\ntwo\r\nthree\r\n");
    await edit.execute({ path: "app.ts", oldText: "one\ntwo", newText: "uno\ndos" }, sb.ctx());
    expect(await readFile(file, "utf8")).toBe("uno\r\ndos\r\nthree\r\n");
  });

  it("rejects an empty oldText and a missing file", async () => {
    expect(await checkToolArgs(edit, { path: "app.ts", oldText: "", newText: "x" })).toEqual({
      ok: false,
      error: "invalid arguments for edit: oldText: must not be empty",
    });
    await expect(edit.execute({ path: "nope.ts", oldText: "a", newText: "b" }, sb.ctx())).rejects.toThrow(
      "file not found: nope.ts",
    );
  });
});
