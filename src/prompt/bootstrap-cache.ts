import fs from "node:fs";
import path from "node:path";
import {
  BOOTSTRAP_FILE_NAMES,
  type BootstrapFile,
  type LoadBootstrapOptions,
  loadBootstrapFiles,
} from "./bootstrap.js";

/**
 * Bootstrap files are re-read only when one of them changed: eight stats per turn instead of eight reads.
 * Callers get fresh copies, because the agent:bootstrap hook may edit the list it is given.
 */
export class BootstrapCache {
  private readonly byDir = new Map<string, { key: string; files: BootstrapFile[] }>();

  async load(workspaceDir: string, opts: LoadBootstrapOptions = {}): Promise<BootstrapFile[]> {
    let key = "";
    for (const name of BOOTSTRAP_FILE_NAMES) {
      const st = fs.statSync(path.join(workspaceDir, name), { bigint: true, throwIfNoEntry: false });
      key += st ? `${st.mtimeNs}:${st.size}:${st.ino};` : "-;";
    }
    const cached = this.byDir.get(workspaceDir);
    if (cached && cached.key === key) return cached.files.map((f) => ({ ...f }));
    const files = await loadBootstrapFiles(workspaceDir, opts);
    if (this.byDir.size >= 64) this.byDir.clear();
    this.byDir.set(workspaceDir, { key, files });
    return files.map((f) => ({ ...f }));
  }
}
