import fs from "node:fs";
import path from "node:path";
import {
  BOOTSTRAP_FILE_NAMES,
  type BootstrapFile,
  type LoadBootstrapOptions,
  loadBootstrapFiles,
} from "./bootstrap.js";
import { DirChangeGate } from "./dir-watch.js";
import { skillsFingerprint } from "./skills.js";

interface Cached {
  gate: DirChangeGate;
  key: string;
  /** a bootstrap file is a symlink: an edit of its target is no event in the workspace, so it is checked per turn */
  links: boolean;
  files: BootstrapFile[];
}

/** Workspaces (and skills folder sets) a process remembers; past this the cache starts over. */
const MAX_ENTRIES = 64;

/**
 * The workspace's change checks, once per process instead of once per turn. Bootstrap files are re-read only when
 * one of them changed, and the skills folders' fingerprint is recomputed only when something in them changed; both
 * learn of a change from a watch on the directories (prompt/dir-watch.ts), so an edit of AGENTS.md or a skill
 * added is seen by the next turn that starts after it, and a turn where nothing changed makes no fs call at all.
 * Where a directory cannot be watched, or a bootstrap file is a symlink, they stat every turn as before.
 * Callers get fresh copies of the files, because the agent:bootstrap hook may edit the list it is given.
 */
export class BootstrapCache {
  private readonly byDir = new Map<string, Cached>();
  private readonly skills = new Map<string, { gate: DirChangeGate; fingerprint: string }>();

  async load(workspaceDir: string, opts: LoadBootstrapOptions = {}): Promise<BootstrapFile[]> {
    let cached = this.byDir.get(workspaceDir);
    if (cached && !cached.links && !(await cached.gate.mayHaveChanged())) return cached.files.map((f) => ({ ...f }));
    const gate = cached?.gate ?? new DirChangeGate();
    gate.arm([workspaceDir]);
    let key = "";
    let links = false;
    for (const name of BOOTSTRAP_FILE_NAMES) {
      const file = path.join(workspaceDir, name);
      let st = fs.lstatSync(file, { bigint: true, throwIfNoEntry: false });
      if (st?.isSymbolicLink()) {
        links = true;
        st = fs.statSync(file, { bigint: true, throwIfNoEntry: false });
      }
      key += st ? `${st.mtimeNs}:${st.size}:${st.ino};` : "-;";
    }
    if (cached && cached.key === key) {
      cached.links = links;
      return cached.files.map((f) => ({ ...f }));
    }
    const files = await loadBootstrapFiles(workspaceDir, opts);
    if (!cached && this.byDir.size >= MAX_ENTRIES) this.clear();
    cached = { gate, key, links, files };
    this.byDir.set(workspaceDir, cached);
    return files.map((f) => ({ ...f }));
  }

  /** skills.ts's skillsFingerprint of `dirs`, recomputed only when a watch saw a change in them. */
  async skillsFingerprint(dirs: string[]): Promise<string> {
    const id = dirs.join("\0");
    const cached = this.skills.get(id);
    if (cached && !(await cached.gate.mayHaveChanged())) return cached.fingerprint;
    const gate = cached?.gate ?? new DirChangeGate();
    // each skill's own folder too: editing its SKILL.md is an event there, not in the skills folder
    gate.arm([...dirs, ...skillFolders(dirs)]);
    const fingerprint = await skillsFingerprint(dirs);
    if (!cached && this.skills.size >= MAX_ENTRIES) this.clear();
    this.skills.set(id, { gate, fingerprint });
    return fingerprint;
  }

  /** Stops the watches (a runtime closing); the next load looks at the files again. */
  clear(): void {
    for (const c of this.byDir.values()) c.gate.close();
    for (const c of this.skills.values()) c.gate.close();
    this.byDir.clear();
    this.skills.clear();
  }
}

function skillFolders(dirs: string[]): string[] {
  const out: string[] = [];
  for (const dir of dirs) {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      continue; // missing or unreadable: the gate watches its parent, or looks every time
    }
    for (const e of entries) {
      if (!e.name.startsWith(".") && (e.isDirectory() || e.isSymbolicLink())) out.push(path.join(dir, e.name));
    }
  }
  return out;
}
