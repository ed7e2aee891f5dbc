import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { SqliteStoreAdapter } from "./sqlite-adapter.js";
import { SqliteStore } from "./sqlite-store.js";
import { storeConformance } from "./store.conformance.js";

// The Store port over a real database file in a temp state dir; "another store" is a second connection to the same
// file (WAL), as a second process would open it.
storeConformance("sqlite", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "lg-store-conf-"));
  const file = path.join(dir, "loopgate.sqlite");
  const opened: SqliteStore[] = [];
  const openOne = () => {
    const s = new SqliteStore(file);
    opened.push(s);
    return new SqliteStoreAdapter(s);
  };
  return {
    store: openOne(),
    openAnother: async () => openOne(),
    cleanup: async () => {
      for (const s of opened) s.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});
